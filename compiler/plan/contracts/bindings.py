"""Pass C sub-step 5: bind every input slot to exactly one producer, ranked 1..4."""

from collections.abc import Container, Iterator
from dataclasses import dataclass, field

from compiler.plan.contracts.names import check_slot_names
from compiler.plan.contracts.outputs import ResolvedOutput
from compiler.typesystem.compat import Consumer, Producer, rank_binding
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import RANK_NAMES, BindingSource, SlotBinding
from schemas.diagnostics import Diagnostic
from schemas.plan import AbstractInput, ResolvedStep
from schemas.typesystem import Adapter


@dataclass(frozen=True)
class AdapterRequest:
    """A rank-3 (or generic) binding that needs a visible adapter step."""

    producer: ResolvedOutput
    adapter: Adapter
    consumer_key: str
    slot: str


@dataclass
class ProducerIndex:
    """Who produces what: by slot, by path, plus the run's declared inputs."""

    by_slot: dict[str, list[ResolvedOutput]] = field(default_factory=dict)
    by_path: dict[str, list[ResolvedOutput]] = field(default_factory=dict)
    run_inputs: dict[str, ResolvedOutput] = field(default_factory=dict)

    by_step_slot: dict[tuple[str, str], list[ResolvedOutput]] = field(default_factory=dict)

    def add(self, out: ResolvedOutput) -> None:
        self.by_slot.setdefault(out.slot, []).append(out)
        self.by_path.setdefault(out.path, []).append(out)
        self.by_step_slot.setdefault((out.step_key, out.slot), []).append(out)


@dataclass(frozen=True)
class BindingResult:
    binding: SlotBinding
    adapter: AdapterRequest | None


def bind_inputs(
    step: ResolvedStep,
    index: ProducerIndex,
    upstream: Container[str],
    lib: TypeLibrary,
    problems: list[Diagnostic],
) -> list[BindingResult]:
    """Bind each abstract input; every failure is a diagnostic, never a guess."""
    results: list[BindingResult] = []
    policy = lib.policies[step.policy_profile_id]
    for i, inp in enumerate(step.abstract_inputs):
        where = f"abstract_inputs[{i}]"
        accepted = accepted_kinds(step, inp, lib, problems, where)
        if accepted is None:
            continue
        producer = _find_producer(step, inp, index, upstream, problems, where)
        if producer is None:
            continue
        compat = rank_binding(
            Producer(producer.entity_schema_id, producer.kind_key, producer.profile_id),
            Consumer(inp.entity_schema_id, tuple(accepted)),
            policy,
            lib,
        )
        if not compat.ok:
            problems.append(
                Diagnostic(
                    code=compat.error or "E_INCOMPATIBLE_BINDING",
                    step_key=step.step_key,
                    slot=inp.slot,
                    field=where,
                    message=(
                        f"{producer.step_key or 'run input'}:{producer.path} -> {inp.slot}: "
                        f"{compat.reason}"
                    ),
                    hint=_hint(compat.error),
                )
            )
            continue
        source = BindingSource(
            type="step" if producer.step_key else "run_input",
            step_key=producer.step_key or None,
            slot=producer.slot,
            path=producer.path,
        )
        kind = compat.adapter.to_kind if compat.adapter else producer.kind_key
        binding = SlotBinding(
            slot=inp.slot,
            path=producer.path,
            required=inp.required,
            entity_schema_id=inp.entity_schema_id or producer.entity_schema_id,
            kind_key=kind,
            profile_id=(
                lib.canonical_profile(producer.entity_schema_id, kind)
                if compat.adapter
                else producer.profile_id
            ),
            source=source,
            rank=compat.rank,
            rank_name=RANK_NAMES[compat.rank],
            adapter_id=compat.adapter.adapter_id if compat.adapter else None,
        )
        request = (
            AdapterRequest(producer, compat.adapter, step.step_key, inp.slot)
            if compat.adapter
            else None
        )
        results.append(BindingResult(binding, request))
    return results


def _hint(error: str | None) -> str:
    if error == "E_POLICY":
        return (
            "pin a policy that allows it (policy_profile_id), or make the producer emit the "
            "consumer's entity and kind"
        )
    return "make the producer emit an accepted kind of the same entity, or accept its kind"


def accepted_kinds(
    step: ResolvedStep, inp: AbstractInput, lib: TypeLibrary, problems: list[Diagnostic], where: str
) -> list[str] | None:
    """The kinds this input accepts (its own list, else the slot's defaults), or None if unknown."""
    known = check_slot_names(
        step_key=step.step_key,
        slot=inp.slot,
        entity_schema_id=inp.entity_schema_id,
        kind_keys=inp.accepted_kind_keys,
        kinds_field="accepted_kind_keys",
        where=where,
        lib=lib,
        problems=problems,
    )
    if not known:
        return None
    return list(inp.accepted_kind_keys) or list(lib.slots[inp.slot].default_kind_keys)


def _pools(
    step: ResolvedStep,
    inp: AbstractInput,
    cands: list[ResolvedOutput],
    index: ProducerIndex,
    upstream: Container[str],
) -> Iterator[list[ResolvedOutput]]:
    """Direct dependencies first, then any ancestor; the second is built only if needed."""
    if inp.from_step is not None:
        yield cands
        return
    yield [
        c for d in dict.fromkeys(step.depends_on) for c in index.by_step_slot.get((d, inp.slot), [])
    ]
    yield [c for c in cands if c.step_key in upstream]


def _find_producer(
    step: ResolvedStep,
    inp: AbstractInput,
    index: ProducerIndex,
    upstream: Container[str],
    problems: list[Diagnostic],
    where: str,
) -> ResolvedOutput | None:
    if inp.path is not None:
        cands = index.by_path.get(inp.path, [])
        run = [r for r in index.run_inputs.values() if r.path == inp.path]
        if run:
            return run[0]
        if not cands:
            return _unbound(
                step,
                inp,
                problems,
                where + ".path",
                f"no step or run input produces {inp.path!r}",
                "produce the path in an upstream step or declare it in run_inputs",
            )
        chosen = next((c for c in cands if c.slot == inp.slot), cands[0])
        if chosen.step_key not in upstream:
            return _unbound(
                step,
                inp,
                problems,
                where + ".path",
                f"{inp.path!r} is produced by {chosen.step_key!r}, which is not upstream",
                f"add {chosen.step_key!r} to depends_on",
            )
        return chosen
    if inp.from_step is not None:
        cands = index.by_step_slot.get((inp.from_step, inp.slot), [])
        if inp.from_step not in upstream:
            return _unbound(
                step,
                inp,
                problems,
                where + ".from_step",
                f"input comes from {inp.from_step!r}, which is not upstream",
                f"add {inp.from_step!r} to depends_on",
            )
    else:
        cands = index.by_slot.get(inp.slot, [])
    for pool in _pools(step, inp, cands, index, upstream):
        if len(pool) == 1:
            return pool[0]
        if len(pool) > 1:
            names = ", ".join(f"{c.step_key}:{c.path}" for c in pool)
            problems.append(
                Diagnostic(
                    code="E_AMBIGUOUS_BINDING",
                    step_key=step.step_key,
                    slot=inp.slot,
                    field=where,
                    message=f"slot {inp.slot!r} is produced by several upstream steps: {names}",
                    hint="set abstract_inputs[].from_step or .path to choose one",
                )
            )
            return None
    if inp.slot in index.run_inputs and inp.from_step is None:
        return index.run_inputs[inp.slot]
    if not inp.required:
        return None
    later = [c.step_key for c in cands if c.step_key != step.step_key]
    hint = (
        f"add {later[0]!r} to depends_on"
        if later
        else "add an upstream step that outputs this slot, or a run input named after it"
    )
    return _unbound(
        step, inp, problems, where, f"no upstream step produces slot {inp.slot!r}", hint
    )


def _unbound(
    step: ResolvedStep,
    inp: AbstractInput,
    problems: list[Diagnostic],
    field: str,
    message: str,
    hint: str,
) -> ResolvedOutput | None:
    problems.append(
        Diagnostic(
            code="E_UNBOUND_INPUT",
            step_key=step.step_key,
            slot=inp.slot,
            field=field,
            message=message,
            hint=hint,
        )
    )
    return None
