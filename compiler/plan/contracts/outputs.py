"""Pass C sub-step 3: resolve every declared output to a library-backed artifact contract."""

from dataclasses import dataclass

from compiler.plan.contracts.names import check_slot_names, unknown_kind
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import ContractIO
from schemas.diagnostics import Diagnostic
from schemas.plan import AbstractOutput, ArtifactContract, ResolvedStep


@dataclass(frozen=True)
class ResolvedOutput:
    """One output as the type system sees it; the producer side of a binding."""

    step_key: str
    slot: str
    path: str
    kind_key: str
    entity_schema_id: str | None
    profile_id: str | None


def resolve_outputs(
    step: ResolvedStep, lib: TypeLibrary, problems: list[Diagnostic]
) -> tuple[dict[str, ArtifactContract], list[ResolvedOutput]]:
    """Artifact contracts keyed by path, and the slotted outputs they carry."""
    by_path = _abstract_by_path(step, lib, problems)
    contracts: dict[str, ArtifactContract] = {}
    outputs: list[ResolvedOutput] = []
    declared = {o.path for o in step.expected_outputs}
    for path in step.artifact_contracts:
        if path not in declared:
            problems.append(
                Diagnostic(
                    code="E_UNDECLARED_OUTPUT",
                    step_key=step.step_key,
                    field=f"artifact_contracts.{path}",
                    message=f"artifact contract for {path!r}, which is not an expected output",
                    hint="add the path to expected_outputs or remove its artifact contract",
                )
            )
    for i, exp in enumerate(step.expected_outputs):
        field = f"expected_outputs[{i}]"
        planned = step.artifact_contracts.get(exp.path, ArtifactContract())
        abstract = by_path.get(exp.path, [])
        kind_key = _kind(step, exp.path, planned, abstract, lib, problems, field)
        if kind_key is None:
            continue
        kind = lib.kinds[kind_key]
        if planned.format is not None and planned.format != kind.format:
            problems.append(
                Diagnostic(
                    code="E_KIND_MISMATCH",
                    step_key=step.step_key,
                    field=f"artifact_contracts.{exp.path}.format",
                    message=(
                        f"format {planned.format!r} contradicts kind {kind_key} ({kind.format})"
                    ),
                    hint=f"use format {kind.format!r} or a path/kind that is {planned.format}",
                )
            )
        entity = next((a.entity_schema_id for a in abstract if a.entity_schema_id), None)
        profile = _profile(step, abstract, entity, kind_key, lib, problems, field)
        contracts[exp.path] = ArtifactContract(
            format=kind.format,
            required_top_level_type=planned.required_top_level_type or kind.top_level_type,
            kind_key=kind_key,
            media_type=kind.media_type,
            parse_validator=kind.parse_validator,
            entity_schema_id=entity,
            profile_id=profile,
            role=exp.role,
            required_columns=planned.required_columns,
        )
        for a in abstract or [AbstractOutput(slot=exp.role)]:
            outputs.append(
                ResolvedOutput(
                    step.step_key, a.slot, exp.path, kind_key, a.entity_schema_id, profile
                )
            )
    return contracts, outputs


def as_contract_io(outputs: list[ResolvedOutput]) -> list[ContractIO]:
    return [
        ContractIO(
            slot=o.slot, path=o.path, kind_key=o.kind_key, entity_schema_id=o.entity_schema_id
        )
        for o in outputs
    ]


def _abstract_by_path(
    step: ResolvedStep, lib: TypeLibrary, problems: list[Diagnostic]
) -> dict[str, list[AbstractOutput]]:
    """Attach each abstract output to the expected output it describes."""
    paths = [o.path for o in step.expected_outputs]
    result: dict[str, list[AbstractOutput]] = {}
    for i, ao in enumerate(step.abstract_outputs):
        field = f"abstract_outputs[{i}]"
        check_slot_names(
            step_key=step.step_key,
            slot=ao.slot,
            entity_schema_id=ao.entity_schema_id,
            kind_keys=ao.preferred_kind_keys,
            kinds_field="preferred_kind_keys",
            where=field,
            lib=lib,
            problems=problems,
        )
        if ao.path is not None:
            target = [ao.path] if ao.path in paths else []
        elif len(paths) == 1:
            target = paths
        else:
            target = [
                p for p in paths if any(lib.kind_accepts_path(k, p) for k in ao.preferred_kind_keys)
            ]
        if len(target) != 1:
            problems.append(
                Diagnostic(
                    code="E_UNDECLARED_OUTPUT" if ao.path else "E_AMBIGUOUS_BINDING",
                    step_key=step.step_key,
                    slot=ao.slot,
                    field=field + ".path",
                    message=(
                        f"output slot {ao.slot!r} names path {ao.path!r}, "
                        "which is not an expected output"
                        if ao.path
                        else f"output slot {ao.slot!r} could describe {len(target)} of the "
                        f"{len(paths)} expected outputs"
                    ),
                    hint="set abstract_outputs[].path to one of: " + ", ".join(paths),
                )
            )
            continue
        result.setdefault(target[0], []).append(ao)
    return result


def _kind(
    step: ResolvedStep,
    path: str,
    planned: ArtifactContract,
    abstract: list[AbstractOutput],
    lib: TypeLibrary,
    problems: list[Diagnostic],
    field: str,
) -> str | None:
    if planned.kind_key is not None:
        if planned.kind_key not in lib.kinds:
            problems.append(
                unknown_kind(
                    step.step_key,
                    None,
                    f"artifact_contracts.{path}.kind_key",
                    planned.kind_key,
                    lib,
                )
            )
            return None
        if not lib.kind_accepts_path(planned.kind_key, path):
            exts = ", ".join(lib.kinds[planned.kind_key].extensions)
            problems.append(
                Diagnostic(
                    code="E_KIND_MISMATCH",
                    step_key=step.step_key,
                    field=field + ".path",
                    message=(
                        f"{path!r} does not have an extension of kind {planned.kind_key} ({exts})"
                    ),
                    hint="rename the output or declare the kind that matches its extension",
                )
            )
            return None
        return planned.kind_key
    preferred = [k for a in abstract for k in a.preferred_kind_keys if k in lib.kinds]
    fitting = [k for k in preferred if lib.kind_accepts_path(k, path)]
    if preferred and not fitting:
        problems.append(
            Diagnostic(
                code="E_KIND_MISMATCH",
                step_key=step.step_key,
                field=field + ".path",
                message=f"{path!r} fits none of the preferred kinds {', '.join(preferred)}",
                hint="give the output an extension of a preferred kind",
            )
        )
        return None
    if fitting:
        return fitting[0]
    inferred = lib.kind_for_path(path)
    if inferred is None:
        problems.append(
            Diagnostic(
                code="E_BAD_EXTENSION",
                step_key=step.step_key,
                field=field + ".path",
                message=f"{path!r} has no recognized extension, so its artifact kind is unknown",
                hint="use an extension such as .json, .csv, .html, .md, or declare kind_key",
            )
        )
        return None
    return inferred.kind_key


def _profile(
    step: ResolvedStep,
    abstract: list[AbstractOutput],
    entity: str | None,
    kind_key: str,
    lib: TypeLibrary,
    problems: list[Diagnostic],
    field: str,
) -> str | None:
    named = next((a.profile_id for a in abstract if a.profile_id), None)
    if named is None:
        return lib.canonical_profile(entity, kind_key)
    prof = lib.profiles.get(named)
    if prof is None:
        problems.append(
            Diagnostic(
                code="E_UNKNOWN_PROFILE",
                step_key=step.step_key,
                field=field,
                message=f"artifact profile {named!r} does not exist",
                hint="use a canonical profile of the domain pack (`forge packs show <domain>`)",
            )
        )
        return None
    if prof.kind_key != kind_key or (entity is not None and prof.entity_schema_id != entity):
        problems.append(
            Diagnostic(
                code="E_KIND_MISMATCH",
                step_key=step.step_key,
                field=field,
                message=f"profile {named} is {prof.entity_schema_id} as {prof.kind_key}, "
                f"but the output is {entity} as {kind_key}",
                hint="name a profile that matches the output's entity and kind",
            )
        )
    return named
