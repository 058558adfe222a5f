"""Pass C sub-step 1: structural checks on the candidate (keys, dependencies, cycles)."""

from compiler.plan.contracts.graph import find_cycle
from schemas.diagnostics import Diagnostic
from schemas.plan import ResolvedPlan, ResolvedStep


def validate_candidate(plan: ResolvedPlan) -> list[Diagnostic]:
    """Unique step keys, known dependencies, no cycles, producing steps declare outputs."""
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    for step in plan.steps:
        if step.step_key in seen:
            problems.append(
                Diagnostic(
                    code="E_DUPLICATE_STEP",
                    step_key=step.step_key,
                    field="step_key",
                    message=f"step key {step.step_key!r} is used by more than one step",
                    hint="give every step a unique step_key",
                )
            )
        seen.add(step.step_key)
    for step in plan.steps:
        for i, dep in enumerate(step.depends_on):
            if dep not in seen:
                problems.append(
                    Diagnostic(
                        code="E_UNKNOWN_DEPENDENCY",
                        step_key=step.step_key,
                        field=f"depends_on[{i}]",
                        message=f"depends on {dep!r}, which is not a step of this plan",
                        hint="name an existing step_key or remove the dependency",
                    )
                )
            elif dep == step.step_key:
                problems.append(
                    Diagnostic(
                        code="E_CYCLE",
                        step_key=step.step_key,
                        field=f"depends_on[{i}]",
                        message=f"step depends on itself: {dep} -> {dep}",
                        hint="remove the self-dependency",
                    )
                )
        for i, inp in enumerate(step.abstract_inputs):
            if inp.from_step is not None and inp.from_step not in seen:
                problems.append(
                    Diagnostic(
                        code="E_UNKNOWN_DEPENDENCY",
                        step_key=step.step_key,
                        slot=inp.slot,
                        field=f"abstract_inputs[{i}].from_step",
                        message=(
                            f"input comes from {inp.from_step!r}, which is not a step of this plan"
                        ),
                        hint="name an existing step_key",
                    )
                )
        if step.kind in ("code", "evaluate", "adapter") and not step.expected_outputs:
            problems.append(
                Diagnostic(
                    code="E_NO_OUTPUTS",
                    step_key=step.step_key,
                    field="expected_outputs",
                    message=f"a {step.kind} step must declare at least one expected output",
                    hint=(
                        "add expected_outputs with a path under output/ "
                        "so the platform can verify it"
                    ),
                )
            )
        if step.kind == "evaluate":
            problems += _evaluation_problems(step)
        if step.kind == "adapter" and not step.code:
            problems.append(
                Diagnostic(
                    code="E_MISSING_CODE",
                    step_key=step.step_key,
                    field="code",
                    message="an adapter step written in the plan must carry its code",
                    hint=(
                        "add `code`, or let the compiler insert a library adapter by binding kinds"
                    ),
                )
            )
    deps = {s.step_key: [d for d in s.depends_on if d != s.step_key] for s in plan.steps}
    cycle = find_cycle([s.step_key for s in plan.steps], deps)
    if cycle is not None:
        problems.append(
            Diagnostic(
                code="E_CYCLE",
                step_key=cycle[0],
                field="depends_on",
                message="dependency cycle: " + " -> ".join(cycle),
                hint="break the cycle: a step cannot (transitively) depend on its own output",
            )
        )
    return problems


def _evaluation_problems(step: ResolvedStep) -> list[Diagnostic]:
    """An evaluate step writes its verdict as JSON and judges only files it reads."""
    problems = []
    if step.expected_outputs and not any(o.path.endswith(".json") for o in step.expected_outputs):
        problems.append(
            Diagnostic(
                code="E_EVALUATION_BUNDLE",
                step_key=step.step_key,
                field="expected_outputs",
                message="an evaluate step writes its verdict as JSON, and no output ends in .json",
                hint="declare an output such as output/<step>.verdict.json",
            )
        )
    spec = step.evaluation
    if spec is None:
        return problems
    reads = set(step.input_file_paths)
    for field in ("source", "derived"):
        for i, path in enumerate(getattr(spec, field)):
            if path not in reads:
                problems.append(
                    Diagnostic(
                        code="E_EVALUATION_BUNDLE",
                        step_key=step.step_key,
                        field=f"evaluation.{field}[{i}]",
                        message=f"the bundle names {path}, which the step does not read",
                        hint="list it in input_file_paths, or remove it from the bundle",
                    )
                )
    return problems
