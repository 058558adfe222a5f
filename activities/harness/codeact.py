"""The Code-Act executor (seed 000 Part VI): the model writes Python, the platform runs it.

One step attempt is a bounded tool loop: the model receives the step's dispatch packet under the
prompt authority hierarchy (seed 000 §6.6), compiled by the context pack compiler; it answers with
`run_python` calls; the platform runs each program in the sandbox and answers with the exit code,
the tails of stdout and stderr, the postflight receipt and what still fails verification. The loop
ends when the harness verifies the outputs (the platform's word, never the model's), when the
model stops calling the tool (the attempt fails with what is still wrong), or when the step's
tool budget is spent. Fresh mind per step: the conversation starts from the packet alone; a
repair attempt adds the previous attempt's failure class, missing outputs, last program and
write diff, under the same contract.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from activities.harness.codeact_prompt import RUN_PYTHON, packet_blocks, task_text
from activities.harness.program_credentials import credential_problem
from activities.masked_output import clipped
from activities.models.base import ModelError
from activities.models.gateway import ModelGateway
from compiler.context import compile_context
from schemas.compiled import CompiledStep, DispatchPacket
from schemas.context import Block, ContextPack, EvidenceRef, InvokeRequest, RunContext
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.models import (
    CallScope,
    Message,
    ModelRequest,
    ModelResponse,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)
from schemas.plan import ParameterDecl, Scalar
from schemas.profile import ConsumerBinding

RUN_PYTHON_TOOL = ToolDef(
    name=RUN_PYTHON,
    description=(
        "Run a Python 3.11 program in the step's sandbox (cwd /workspace, no network, inputs under "
        "/workspace/input and upstream outputs where the packet says, write the declared outputs). "
        "Returns the exit code, the tails of stdout and stderr, the files written and what still "
        "fails verification."
    ),
    input_schema={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "the whole program"}},
        "required": ["code"],
        "additionalProperties": False,
    },
)
CODE_MAX = 256 * 1024  # characters of one program
TAIL = 2000  # characters of stdout/stderr returned to the model


class ExecutorFailure(ForgeError):
    """The attempt ends without verified outputs; failure_class follows seed 000 §6.5."""

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code


@dataclass(frozen=True)
class TurnReport:
    """What one program did, as the platform observed and verified it."""

    exit_code: int | None
    killed_by: str | None
    stdout_tail: str
    stderr_tail: str
    files: dict[str, Any]
    problems: list[str]
    failure_class: ErrorCode | None  # the class the attempt fails with if it ends here

    @property
    def verified(self) -> bool:
        return not self.problems

    def for_model(self) -> str:
        return json.dumps(
            {
                "exit_code": self.exit_code,
                "killed_by": self.killed_by,
                "stdout_tail": self.stdout_tail,
                "stderr_tail": self.stderr_tail,
                "outputs": self.files,
                "verified": self.verified,
                "problems": self.problems,
            },
            indent=1,
            sort_keys=True,
        )


class Session(Protocol):
    """The harness side of the loop: runs a program, checks outputs, records dispatches."""

    def run_code(self, code: str, turn: int) -> TurnReport: ...

    def check(self) -> TurnReport:
        """Verify the outputs as they stand, without running anything."""
        ...

    def budget_refusal(self) -> str | None:
        """Why no further model call may be made (the run's budget), or None."""
        ...


@dataclass(frozen=True)
class RepairContext:
    """The previous attempt's failure, carried into a repair attempt (seed 000 §6.5)."""

    attempt: int
    failure_class: str
    message: str
    missing_outputs: list[str]
    last_code: str | None
    write_diff: dict[str, Any]

    def block(self) -> Block:
        text = (
            f"Repair context: attempt {self.attempt} of this step failed with "
            f"{self.failure_class}: {self.message}\n"
            f"Missing or invalid outputs: {', '.join(self.missing_outputs) or 'none'}\n"
            f"Files it wrote: {json.dumps(self.write_diff, sort_keys=True)}\n"
        )
        if self.last_code:
            text += (
                f"Its last program:\n```python\n{clipped(self.last_code, 8000, 'prompt')}\n```\n"
            )
        text += "The contract is unchanged: fix the program, do not change what it must produce."
        return Block(kind="repair", text=text, priority=95)


@dataclass
class Outcome:
    code: str
    turns: int
    model_calls: int
    reports: list[TurnReport] = field(default_factory=list)


@dataclass(frozen=True)
class LoopSpec:
    step: CompiledStep
    packet: DispatchPacket
    binding: ConsumerBinding
    run_context: RunContext
    scope: CallScope
    evidence: Sequence[EvidenceRef]
    bridge_tools: Sequence[str]
    thinking_budget_tokens: int | None = None
    repair: RepairContext | None = None
    # The run's declared parameters with this run's values (meta/params.json).
    params: Sequence[tuple[ParameterDecl, Scalar]] = ()


def _request(
    spec: LoopSpec, system: str, messages: list[Message], *, tools: list[ToolDef]
) -> ModelRequest:
    overrides = spec.binding.runtime_overrides
    thinking = spec.thinking_budget_tokens
    if thinking is None and overrides.use_extended_thinking:
        thinking = overrides.thinking_budget_tokens
    return ModelRequest(
        model=spec.binding.model_binding_ref,
        consumer="executor",
        system=system,
        messages=messages,
        tools=tools,
        max_tokens=overrides.max_tokens or 8192,
        temperature=overrides.temperature,
        thinking_budget_tokens=thinking or None,
        timeout_s=overrides.timeout_ms / 1000 if overrides.timeout_ms else None,
        cache_prefix=True,
    )


def run_loop(
    spec: LoopSpec,
    *,
    gateway: ModelGateway,
    pack: ContextPack,
    session: Session,
    record_dispatch: Callable[[int, str, TurnReport], None],
) -> Outcome:
    """The tool loop of one attempt; raises ExecutorFailure or ModelError when it cannot verify."""
    budget = spec.packet.execution_contract.tool_budget
    if budget <= 0:
        raise ExecutorFailure(
            ErrorCode.BUDGET_EXHAUSTED,
            f"step {spec.step.step_key} has a tool budget of 0: nothing can run",
        )
    context = compile_context(
        pack,
        spec.run_context,
        InvokeRequest(
            intent_id="forge.execute", message=task_text(spec.step), sections=packet_blocks(spec)
        ),
        evidence=lambda _query: list(spec.evidence),
    )
    messages = [Message(role="user", content=[TextBlock(text=context.task_prompt)])]
    outcome = Outcome(code="", turns=0, model_calls=0)
    last: TurnReport | None = None
    call = 0
    while True:
        if outcome.turns >= budget:
            raise ExecutorFailure(
                ErrorCode.BUDGET_EXHAUSTED,
                f"step {spec.step.step_key}: tool budget of {budget} spent without verified "
                f"outputs; last: {'; '.join(last.problems) if last else 'nothing ran'}",
            )
        refusal = session.budget_refusal()
        if refusal is not None:
            raise ExecutorFailure(
                ErrorCode.BUDGET_EXHAUSTED, f"step {spec.step.step_key}: {refusal}"
            )
        call += 1
        scope = spec.scope.model_copy(update={"call_key": f"exec:{call}"})
        result = gateway.call(
            _request(spec, context.system_prompt, messages, tools=[RUN_PYTHON_TOOL]),
            scope,
            context=context,
        )
        outcome.model_calls += 1
        response = result.response
        # Programs as the model wrote them (the record is masked): run unedited or refused.
        uses = list((result.verbatim or response).tool_uses)
        if not uses:
            # The model stopped calling the tool: the attempt ends with what its last program
            # left wrong (a program that never ran: what the outputs lack).
            final = last or session.check()
            raise ExecutorFailure(
                final.failure_class or ErrorCode.OUTPUT_SHAPE,
                f"step {spec.step.step_key}: the model ended its turn without verified outputs "
                f"({'; '.join(final.problems) or 'no program was run'})"
                + (f"; it said: {clipped(response.text, 300, 'failure')}" if response.text else ""),
            )
        results: list[ToolResultBlock] = []
        accepted = False
        for use in uses:
            if accepted:
                results.append(_skipped(use))
                continue
            if outcome.turns >= budget:
                raise ExecutorFailure(
                    ErrorCode.BUDGET_EXHAUSTED,
                    f"step {spec.step.step_key}: tool budget of {budget} spent without verified "
                    f"outputs; last: {'; '.join(last.problems) if last else 'nothing ran'}",
                )
            report, code = _dispatch(use, outcome.turns + 1, session, record_dispatch)
            if code is not None:
                outcome.turns += 1
                outcome.reports.append(report)
                last = report
                if report.verified:
                    outcome.code = code
                    accepted = True
            results.append(
                ToolResultBlock(
                    tool_use_id=use.id, content=report.for_model(), is_error=not report.verified
                )
            )
        if accepted:
            return outcome
        messages = [*messages, _assistant(response), Message(role="user", content=list(results))]


def _dispatch(
    use: ToolUseBlock,
    turn: int,
    session: Session,
    record: Callable[[int, str, TurnReport], None],
) -> tuple[TurnReport, str | None]:
    """Run one tool_use; a malformed call costs no run, a program holding a credential a turn."""
    code = use.input.get("code") if use.name == RUN_PYTHON else None
    if use.name != RUN_PYTHON or not isinstance(code, str) or not code.strip():
        problem = (
            f"unknown tool {use.name!r}: the only tool is {RUN_PYTHON}"
            if use.name != RUN_PYTHON
            else f"{RUN_PYTHON} needs a non-empty string `code`"
        )
        return TurnReport(None, None, "", "", {}, [problem], ErrorCode.CODE_ERROR), None
    if len(code) > CODE_MAX:
        problem = f"the program is {len(code)} characters; at most {CODE_MAX} are accepted"
        return TurnReport(None, None, "", "", {}, [problem], ErrorCode.CODE_ERROR), None
    refused = credential_problem(code)
    if refused is not None:  # a failed turn: recorded masked, not run
        problem, recorded = refused
        report = TurnReport(None, None, "", "", {}, [problem], ErrorCode.CODE_ERROR)
        record(turn, recorded, report)
        return report, recorded
    report = session.run_code(code, turn)
    record(turn, code, report)
    return report, code


def _skipped(use: ToolUseBlock) -> ToolResultBlock:
    return ToolResultBlock(
        tool_use_id=use.id, content="not run: the outputs were already verified", is_error=False
    )


def _assistant(response: ModelResponse) -> Message:
    """The model's turn as sent back: thinking blocks kept verbatim (the API requires them)."""
    content = [b for b in response.content if not (isinstance(b, TextBlock) and not b.text)]
    return Message(role="assistant", content=list(content) or [TextBlock(text="(no text)")])


__all__ = [
    "RUN_PYTHON",
    "ExecutorFailure",
    "LoopSpec",
    "ModelError",
    "Outcome",
    "RepairContext",
    "Session",
    "TurnReport",
    "packet_blocks",
    "run_loop",
    "TAIL",
]
