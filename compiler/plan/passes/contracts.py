"""Pass C: abstract, annotated steps become frozen contracts sealed by contract_hash."""

from compiler.errors import CompilerError
from compiler.hashing import sha256_of
from compiler.plan.context import CompileContext
from compiler.plan.contracts.adapters import adapter_key_base, adapter_output_path, adapter_step
from compiler.plan.contracts.bindings import (
    BindingResult,
    ProducerIndex,
    accepted_kinds,
    bind_inputs,
)
from compiler.plan.contracts.finalize import seal
from compiler.plan.contracts.graph import Ancestors, Upstream, topological
from compiler.plan.contracts.outputs import ResolvedOutput, as_contract_io, resolve_outputs
from compiler.plan.contracts.validate import validate_candidate
from compiler.plan.contracts.wiring import normalize_step, run_input_outputs
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import BindingSource, CompiledStep, ContractPlan, SlotBinding
from schemas.diagnostics import Diagnostic
from schemas.plan import ArtifactContract, ResolvedPlan, ResolvedStep

_GRAPH_ERRORS = {"E_DUPLICATE_STEP", "E_UNKNOWN_DEPENDENCY", "E_CYCLE"}


def contracts(plan: ResolvedPlan, *, ctx: CompileContext) -> ContractPlan:
    """Run the nine sub-steps of seed 000 §5.4; every problem is reported at once."""
    lib = ctx.library  # sub-step 2: the library snapshot this plan is compiled against
    problems = validate_candidate(plan)  # sub-step 1
    index = ProducerIndex(run_inputs=run_input_outputs(plan.run_inputs, lib, problems))
    steps = [normalize_step(s, problems) for s in plan.steps]  # sub-step 4
    resolved: dict[str, tuple[dict[str, ArtifactContract], list[ResolvedOutput]]] = {}
    for step in steps:  # sub-step 3
        resolved[step.step_key] = resolve_outputs(step, lib, problems)
        for out in resolved[step.step_key][1]:
            index.add(out)
    _check_writers(steps, problems)
    if any(p.code in _GRAPH_ERRORS for p in problems):
        # Bindings need a sound graph; still report every input that names unknown types.
        for s in steps:
            for i, inp in enumerate(s.abstract_inputs):
                accepted_kinds(s, inp, lib, problems, f"abstract_inputs[{i}]")
        raise CompilerError(problems)
    keys = [s.step_key for s in steps]
    deps = {s.step_key: list(s.depends_on) for s in steps}
    ancestors = Ancestors(deps)
    upstream = {k: ancestors.of(k) for k in keys}
    bound = {
        s.step_key: bind_inputs(s, index, upstream[s.step_key], lib, problems) for s in steps
    }  # 5
    for s in steps:
        _check_reads(s, index, upstream[s.step_key], problems)
    if problems:
        raise CompilerError(problems)
    steps, bound, inserted = _insert_adapters(steps, bound, index, lib, problems)  # sub-step 6
    for s in steps:
        if s.step_key not in resolved:
            resolved[s.step_key] = resolve_outputs(s, lib, problems)
    if problems:  # an inserted adapter step that does not check out is a library defect
        raise CompilerError(problems)
    order = topological(
        [s.step_key for s in steps], {s.step_key: list(s.depends_on) for s in steps}
    )
    by_key = {s.step_key: s for s in steps}
    compiled: list[CompiledStep] = []
    for n, key in enumerate(order, start=1):  # sub-steps 7-9
        step = by_key[key]
        contracts_, outputs = resolved[key]
        compiled.append(
            seal(
                step,
                step_id=f"step_{n}",
                bindings=[b.binding for b in bound[key]],
                outputs=as_contract_io(outputs),
                contracts=contracts_,
                lib=lib,
                adapter_id=inserted.get(key),
                inserted=key in inserted,
            )
        )
    warnings = [f"{s.step_key}: {w}" for s in compiled for w in s.warnings]
    return ContractPlan(
        mission=plan.mission,
        run_inputs=plan.run_inputs,
        parameters=plan.parameters,
        steps=compiled,
        library_snapshot_hash=lib.snapshot_hash,
        plan_hash=plan_hash(plan.mission, compiled),
        warnings=warnings,
    )


def plan_hash(mission: str, steps: list[CompiledStep]) -> str:
    # Sorted by key: listing independent steps in another order is the same plan.
    contracts = sorted([s.step_key, s.contract_hash] for s in steps)
    return sha256_of({"mission": mission, "contracts": contracts})


def _check_writers(steps: list[ResolvedStep], problems: list[Diagnostic]) -> None:
    writers: dict[str, str] = {}
    for step in steps:
        for i, out in enumerate(step.expected_outputs):
            other = writers.get(out.path)
            if other is not None:
                problems.append(
                    Diagnostic(
                        code="E_DUPLICATE_WRITER",
                        step_key=step.step_key,
                        field=f"expected_outputs[{i}].path",
                        message=f"{out.path!r} is also written by {other!r}",
                        hint="every path has one writer; give one of the outputs another path",
                    )
                )
            else:
                writers[out.path] = step.step_key


def _check_reads(
    step: ResolvedStep, index: ProducerIndex, upstream: Upstream, problems: list[Diagnostic]
) -> None:
    run_paths = {r.path for r in index.run_inputs.values()}
    for i, path in enumerate(step.input_file_paths):
        if path in run_paths:
            continue
        producers = {p.step_key for p in index.by_path.get(path, [])}
        if any(p in upstream for p in producers):
            continue
        hint = (
            f"add {sorted(producers)[0]!r} to depends_on"
            if producers
            else "produce the path in an upstream step or declare it in run_inputs"
        )
        problems.append(
            Diagnostic(
                code="E_UNBOUND_INPUT",
                step_key=step.step_key,
                field=f"input_file_paths[{i}]",
                message=f"reads {path!r}, which no upstream step or run input provides",
                hint=hint,
            )
        )


def _insert_adapters(
    steps: list[ResolvedStep],
    bound: dict[str, list[BindingResult]],
    index: ProducerIndex,
    lib: TypeLibrary,
    problems: list[Diagnostic],
) -> tuple[list[ResolvedStep], dict[str, list[BindingResult]], dict[str, str]]:
    """Insert one visible step per (producer path, target kind); rewire consumers to it."""
    out: list[ResolvedStep] = []
    made: dict[str, ResolvedStep] = {}
    keys: dict[tuple[str, str], str] = {}
    taken = {s.step_key for s in steps}
    written = {o.path for s in steps for o in s.expected_outputs}
    inserted: dict[str, str] = {}
    for step in steps:
        new_bound: list[BindingResult] = []
        extra_deps: list[str] = []
        for res in bound[step.step_key]:
            req = res.adapter
            if req is None:
                new_bound.append(res)
                continue
            identity = (req.producer.path, req.adapter.to_kind)
            key = keys.get(identity, "")
            if not key:
                key = base = adapter_key_base(req)
                n = 1
                while (
                    key in made
                    or key in taken
                    or adapter_output_path(key, req.adapter.to_kind, lib) in written
                ):
                    n += 1
                    key = f"{base}-{n}"
                keys[identity] = key
                made[key] = adapter_step(req, key, step, lib)
                inserted[key] = req.adapter.adapter_id
                out.append(made[key])
                upstream = (
                    frozenset([req.producer.step_key]) if req.producer.step_key else frozenset()
                )
                bound[key] = bind_inputs(made[key], index, upstream, lib, problems)
            path = adapter_output_path(key, req.adapter.to_kind, lib)
            b = res.binding
            new_bound.append(
                BindingResult(
                    SlotBinding.model_validate(
                        {
                            **b.model_dump(),
                            "path": path,
                            "adapter_step_key": key,
                            "source": BindingSource(
                                type="step", step_key=key, slot=b.slot, path=path
                            ),
                        }
                    ),
                    None,
                )
            )
            extra_deps.append(key)
        if extra_deps:
            deps = list(dict.fromkeys([*step.depends_on, *extra_deps]))
            step = step.model_copy(update={"depends_on": deps})
        bound[step.step_key] = new_bound
        out.append(step)
    return out, bound, inserted
