"""Every name a slot declaration uses must exist in the type library; one check for both sides."""

from collections.abc import Sequence

from compiler.typesystem.library import TypeLibrary
from schemas.diagnostics import Diagnostic


def check_slot_names(
    *,
    step_key: str,
    slot: str,
    entity_schema_id: str | None,
    kind_keys: Sequence[str],
    kinds_field: str,
    where: str,
    lib: TypeLibrary,
    problems: list[Diagnostic],
) -> bool:
    """Report an unknown slot, entity or kind of one abstract input/output; True if all known."""
    before = len(problems)
    if slot not in lib.slots:
        problems.append(
            Diagnostic(
                code="E_UNKNOWN_SLOT",
                step_key=step_key,
                slot=slot,
                field=f"{where}.slot",
                message=f"slot {slot!r} is not a cross-step slot of the library",
                hint="use one of: " + ", ".join(sorted(lib.slots)),
            )
        )
    if entity_schema_id is not None and entity_schema_id not in lib.entities:
        problems.append(
            Diagnostic(
                code="E_UNKNOWN_ENTITY",
                step_key=step_key,
                slot=slot,
                field=f"{where}.entity_schema_id",
                message=f"entity {entity_schema_id!r} is defined by no domain pack",
                hint="use an entity from `forge packs show <domain>` or a generic.* entity",
            )
        )
    for k in kind_keys:
        if k not in lib.kinds:
            problems.append(unknown_kind(step_key, slot, f"{where}.{kinds_field}", k, lib))
    return len(problems) == before


def unknown_kind(
    step_key: str, slot: str | None, field: str, kind_key: str, lib: TypeLibrary
) -> Diagnostic:
    return Diagnostic(
        code="E_UNKNOWN_KIND",
        step_key=step_key,
        slot=slot,
        field=field,
        message=f"artifact kind {kind_key!r} does not exist",
        hint="use one of: " + ", ".join(sorted(lib.kinds)),
    )
