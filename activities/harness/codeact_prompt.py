"""The Code-Act executor's prompt: the dispatch packet as sections, the run's parameters, the task.

The sections follow the authority order of seed 000 §6.6; the context pack compiler
(compiler/context) packs them under the executor's prompt pack.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from schemas.compiled import CompiledStep
from schemas.context import Block
from schemas.plan import ParameterDecl, Scalar

if TYPE_CHECKING:
    from activities.harness.codeact import LoopSpec

RUN_PYTHON = "run_python"


def packet_blocks(spec: LoopSpec) -> list[Block]:
    """The dispatch packet as task sections, in the authority order of seed 000 §6.6."""
    packet, step = spec.packet, spec.step
    sections: list[tuple[str, Any]] = [
        ("1. io_contract (highest authority)", packet.io_contract.model_dump(mode="json")),
        ("2. execution_contract", packet.execution_contract.model_dump(mode="json")),
        (
            "3. compiled_step_contract_v1",
            step.compiled_step_contract_v1.model_dump(mode="json"),
        ),
        (
            "4. artifact_contracts",
            {k: v.model_dump(mode="json") for k, v in sorted(packet.artifact_contracts.items())},
        ),
        ("5. skill_bindings", [b.model_dump(mode="json") for b in packet.skill_bindings]),
        (
            "6. materialized_skill_packages",
            [m.model_dump(mode="json") for m in packet.materialized_skill_packages],
        ),
        (
            "7. system_guarantees",
            [
                "inputs are materialized and hash-verified before your first program runs",
                "only the io_contract's write_paths and work/ are writable; anything else in "
                "output/ fails the attempt",
                "outputs are verified by the platform after every program (exists, non-empty, "
                "parses, no placeholders, schema); your own claims are not evidence",
                "the sandbox has no network; governed tools are reached only through "
                "`import forge_bridge; forge_bridge.call(tool_id, args)`",
                f"governed tools this step may call: {', '.join(spec.bridge_tools) or 'none'}",
                "skills are read-only at /skills/<skill_id>/",
            ],
        ),
    ]
    blocks = [
        Block(
            kind="packet",
            text=f"### {title}\n{json.dumps(body, indent=1, sort_keys=True)}",
            priority=100 - i,
        )
        for i, (title, body) in enumerate(sections)
    ]
    if spec.params:
        blocks.append(params_block(spec.params))
    if spec.repair is not None:
        blocks.append(spec.repair.block())
    return blocks


def params_block(params: Sequence[tuple[ParameterDecl, Scalar]]) -> Block:
    """The run's parameters: values the user may change between runs, read, never hard-coded."""
    lines = [
        "### run parameters",
        "Values the user may change from one run to the next. Read each one in your program "
        'with `import forge_bridge; forge_bridge.param("name")` (it returns the typed value); '
        "never write the value itself into the code: the same program must do the right thing "
        "when the run is started with another value.",
    ]
    for decl, value in params:
        about = f" — {decl.description}" if decl.description else ""
        lines.append(f"- {decl.name} ({decl.type}) = {json.dumps(value)}{about}")
    return Block(kind="parameters", text="\n".join(lines), priority=92)


def task_text(step: CompiledStep) -> str:
    """The task line of a step's executor prompt: what to write, and how."""
    outputs = ", ".join(step.executable_contract_v2.write_paths) or "none"
    return (
        f"Step {step.step_key}: {step.label}\nObjective: {step.objective}\n"
        f"Success criteria: {step.success_criteria or 'the declared outputs verify'}\n"
        f"Write exactly: {outputs}\n"
        f"Call {RUN_PYTHON} with a complete program; the platform runs it and reports back."
    )
