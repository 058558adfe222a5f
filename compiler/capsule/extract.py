"""Extraction, pure part: a completed run's record becomes a capsule's content (seed 000 §8.2).

The caller (workers/services/capsules.py) reads the run's events, receipts and compiled plan and
hands them over as a RunRecord; this module decides whether the run may become a capsule and what
the capsule holds. A refusal names every reason at once: a run that did not complete, a step with no
verified completion, a step whose postflight receipt shows an output that did not verify or a file
its contract does not declare, a step reused from another run, a structural step that has no
model-written code, a parameter no step read.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.plan.params import ParameterInvalid, coerce
from schemas.artifacts import ArtifactRef
from schemas.capsule import (
    CapsuleContent,
    CapsuleProvenance,
    CodeCell,
    InputColumn,
    InputParameter,
    ProgramSource,
    ScalarParameter,
    StepProgram,
    StepReceipts,
)
from schemas.compiled import CompiledPlan, CompiledStep
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import ParameterDecl, Scalar, ScalarType
from schemas.receipts import FileReceipt, Receipt

__all__ = ["RunRecord", "StepRun", "extract", "parameter_schema"]

_JSON_TYPE: dict[ScalarType, str] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}


@dataclass(frozen=True)
class StepRun:
    """The accepted attempt of one step, as its events and receipts recorded it."""

    step_key: str
    attempt: int
    contract_hash: str
    preflight_ref: ArtifactRef
    postflight_ref: ArtifactRef
    preflight: Receipt
    postflight: Receipt
    cells: list[CodeCell] = field(default_factory=list)
    params_read: list[str] = field(default_factory=list)
    evaluates: bool = False  # its code called artifact.evaluate through the bridge


@dataclass(frozen=True)
class RunRecord:
    """What extraction needs of a run: its outcome, what it was started with, its steps."""

    run_id: str
    outcome: str  # completed | failed | cancelled | running
    objective: str | None
    params: Mapping[str, Scalar]
    steps: Mapping[str, StepRun]
    reused: Mapping[str, str] = field(default_factory=dict)  # step_key -> the run it came from


def extract(
    plan: CompiledPlan,
    plan_ref: ArtifactRef,
    record: RunRecord,
    *,
    validators: Mapping[str, str],
    structural: Sequence[str] = (),
    params: Mapping[str, ScalarType] | None = None,
) -> CapsuleContent:
    """The capsule content of a completed run; `validators` maps kind_key -> parse validator.

    `params` names scalar parameters (with their types) beyond those the plan declared; every
    one must have been read by a step of the run.

    Raises:
        ForgeError: CAPSULE_REFUSED, every reason the run (or an option) cannot become a capsule.
    """
    problems: list[str] = []
    if record.outcome != "completed":
        problems.append(
            f"run {record.run_id} did not complete ({record.outcome}): only a run that "
            "completed with every step verified becomes a capsule"
        )
    by_key = {s.step_key: s for s in plan.steps}
    for key in structural:
        step = by_key.get(key)
        if step is None:
            problems.append(f"--structural {key}: no such step; steps: {', '.join(by_key)}")
        elif step.backend != "sandbox.session":
            problems.append(
                f"--structural {key}: the step runs {step.backend}, not model-written code "
                "(sandbox.session): only such a step can get fresh code"
            )
    programs = []
    for step in plan.steps:
        program, why = _program(step, record, set(structural))
        problems += why
        if program is not None:
            programs.append(program)
    scalars = _scalars(plan, record, programs, dict(params or {}), problems)
    if problems:
        raise ForgeError(
            f"run {record.run_id} cannot become a capsule: " + "; ".join(problems),
            code=ErrorCode.CAPSULE_REFUSED,
        )
    profile = plan.profile_snapshot.profile
    inputs = _inputs(plan, record, validators)
    return CapsuleContent(
        goal_template=record.objective or plan.mission,
        parameter_schema=parameter_schema(inputs, scalars),
        parameter_bindings={s.name: s.default for s in scalars},
        inputs=inputs,
        scalars=scalars,
        plan_template=plan_ref,
        plan_hash=plan.plan_hash,
        contracts={s.step_key: s.contract_hash for s in plan.steps},
        programs=programs,
        governance={
            "profile_id": plan.profile_snapshot.profile_id,
            "egress": profile.egress.model_dump(mode="json"),
            "budgets": profile.budgets.model_dump(mode="json"),
            "hitl": profile.hitl.model_dump(mode="json"),
            "skill_policy": profile.skill_policy.model_dump(mode="json"),
            "gates": [g.model_dump(mode="json") for g in plan.gates],
        },
        isolation_policy=profile.sandbox.model_dump(mode="json"),
        provenance=CapsuleProvenance(
            source_run_id=record.run_id,
            plan_hash=plan.plan_hash,
            profile_snapshot_hash=plan.profile_snapshot.snapshot_hash,
            library_snapshot_hash=plan.library_snapshot_hash,
            receipts={
                k: StepReceipts(preflight=r.preflight_ref, postflight=r.postflight_ref)
                for k, r in sorted(record.steps.items())
            },
            source_inputs={i.name: i.source_sha256 for i in inputs if i.source_sha256},
        ),
    )


def _source(step: CompiledStep) -> ProgramSource:
    if step.kind == "gate" or step.backend == "gate":
        return "gate"
    if step.uses_recipe is not None or step.backend == "child_workflow":
        return "recipe"
    if step.backend == "evaluator":
        return "evaluator"
    if step.backend == "sandbox.session":
        return "session"
    return "adapter" if step.adapter_id else "frozen"


def _program(
    step: CompiledStep, record: RunRecord, structural: set[str]
) -> tuple[StepProgram | None, list[str]]:
    """The step's program and what refuses it."""
    key, source = step.step_key, _source(step)
    if source == "gate":  # a gate runs nothing: it gates every capsule run as it did this one
        return StepProgram(
            step_key=key, contract_hash=step.contract_hash, backend=step.backend, source=source
        ), []
    if source == "recipe":
        return None, [f"step {key} runs a sub-recipe (uses:), which a capsule cannot hold yet"]
    if key in record.reused:
        return None, [
            f"step {key} was reused from run {record.reused[key]}, not run: extract that run, "
            "or run the plan again without resuming"
        ]
    ran = record.steps.get(key)
    if ran is None:
        return None, [f"step {key} has no verified completion"]
    why = _receipt_problems(step, ran)
    if not ran.contract_hash:
        why.append(f"step {key}: no step.started.v1 is recorded for its accepted attempt")
    elif ran.contract_hash != step.contract_hash:
        why.append(
            f"step {key} ran under contract {ran.contract_hash}, the plan seals "
            f"{step.contract_hash}"
        )
    if source == "session" and step.loop is not None and key not in structural:
        why.append(f"step {key} loops over model-written code: extract it with --structural {key}")
    if source == "session" and not ran.cells and key not in structural:
        why.append(f"step {key}: the programs of its accepted attempt were not recorded")
    if source == "session" and ran.cells and not ran.cells[-1].verified:
        why.append(f"step {key}: the last program of its accepted attempt did not verify")
    program = StepProgram(
        step_key=key,
        contract_hash=step.contract_hash,
        backend=step.backend,
        source=source,
        cells=list(ran.cells) if source == "session" else [],
        structural=key in structural,
        params_read=sorted(set(ran.params_read)),
        evaluates=ran.evaluates,
    )
    return program, why


def _receipt_problems(step: CompiledStep, ran: StepRun) -> list[str]:
    """Outputs that did not verify and files the contract does not declare, per the postflight."""
    key = step.step_key
    declared = {o.path for o in step.executable_contract_v2.step_outputs}
    writable = set(step.executable_contract_v2.write_paths)
    checks_placeholders = "outputs.no_placeholders" in step.executable_contract_v2.validators
    problems = []
    files = {f.path: f for f in ran.postflight.files}
    for path in sorted(declared):
        found = files.get(path)
        if found is None or not found.exists:
            problems.append(f"step {key}: output {path} is not in its postflight receipt")
        elif found.parse_validation is not None and not found.parse_validation.ok:
            why = found.parse_validation.error or "does not parse"
            problems.append(f"step {key}: output {path} did not verify ({why})")
        elif found.placeholder_sentinels and checks_placeholders:
            sentinels = ", ".join(found.placeholder_sentinels)
            problems.append(f"step {key}: output {path} holds placeholders ({sentinels})")
    for path in sorted(set(files) - declared):
        if files[path].exists and not any(_under(path, w) for w in writable):
            problems.append(f"step {key}: its receipt shows an undeclared write to {path}")
    return problems


def _under(path: str, write_path: str) -> bool:
    return path == write_path or path.startswith(write_path.rstrip("/") + "/")


def _scalars(
    plan: CompiledPlan,
    record: RunRecord,
    programs: list[StepProgram],
    named: dict[str, ScalarType],
    problems: list[str],
) -> list[ScalarParameter]:
    """The scalar parameters: declared or named, and read by a step in the source run."""
    readers: dict[str, list[str]] = {}
    for program in programs:
        for name in program.params_read:
            readers.setdefault(name, []).append(program.step_key)
    declared = {d.name: d for d in plan.parameters}
    read = ", ".join(sorted(readers)) or "none"
    for name in sorted(named):
        if name not in readers:
            problems.append(
                f"--param {name}: no step of run {record.run_id} read a parameter {name!r} "
                f"(parameters read: {read}); step code reads one with forge_bridge.param"
            )
    scalars = []
    for name in sorted(set(readers) & (set(declared) | set(named))):
        decl = declared.get(name)
        type_ = named.get(name) or (decl.type if decl else "string")
        value = record.params.get(name, decl.default if decl else None)
        default = None
        if value is not None:
            try:  # as the step read it: an objective run's values arrive as given (text)
                default = coerce(ParameterDecl(name=name, type=type_), value)
            except ParameterInvalid:
                problems.append(f"parameter {name}: the run's value {value!r} is not {type_}")
        scalars.append(
            ScalarParameter(
                name=name,
                type=type_,
                default=default,
                description=decl.description if decl else "",
                read_by=sorted(readers[name]),
            )
        )
    return scalars


def _inputs(
    plan: CompiledPlan, record: RunRecord, validators: Mapping[str, str]
) -> list[InputParameter]:
    """Each run input as a parameter; its contract is what a preflight receipt observed."""
    seen: dict[str, FileReceipt] = {}
    for step in plan.steps:
        ran = record.steps.get(step.step_key)
        for f in ran.preflight.files if ran else []:
            if f.exists and f.path not in seen:
                seen[f.path] = f
    inputs = []
    for decl in plan.run_inputs:
        path = decl.path.removeprefix("./")
        observed = seen.get(path)
        kind = (observed.kind_key if observed else None) or decl.kind_key
        summary: Mapping[str, Any] = observed.schema_summary if observed else {}
        columns = [
            InputColumn(name=str(c["name"]), type=str(c.get("type", "string")))
            for c in summary.get("columns") or []
            if isinstance(c, dict) and "name" in c
        ]
        inputs.append(
            InputParameter(
                name=decl.name,
                path=path,
                required=decl.required,
                kind_key=kind,
                validator=validators.get(kind) if kind else None,
                columns=columns,
                row_shape=_shape(summary),
                observed_rows=_int(summary.get("row_count")),
                source_sha256=observed.sha256 if observed else None,
            )
        )
    return inputs


def _shape(summary: Mapping[str, Any]) -> Any:
    kind = summary.get("type")
    if kind in ("table", "array"):
        return "rows"
    if kind == "object":
        return "object"
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parameter_schema(
    inputs: Sequence[InputParameter], scalars: Sequence[ScalarParameter]
) -> dict[str, Any]:
    """The JSON Schema of a capsule run's parameters: input locations and typed scalars."""
    properties: dict[str, Any] = {}
    for i in inputs:
        described = f"where to read {i.path}"
        if i.columns:
            described += f" (columns: {', '.join(c.name for c in i.columns)})"
        properties[i.name] = {
            "type": "string",
            "description": described,
            "x-forge-input": {
                "path": i.path,
                "kind_key": i.kind_key,
                "columns": {c.name: c.type for c in i.columns},
            },
        }
    for s in scalars:
        entry: dict[str, Any] = {"type": _JSON_TYPE[s.type]}
        if s.default is not None:
            entry["default"] = s.default
        if s.description:
            entry["description"] = s.description
        properties[s.name] = entry
    required = [i.name for i in inputs if i.required]
    required += [s.name for s in scalars if s.default is None]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }
