"""A `LadderContract` for one entity of a domain pack.

Its JSON Schema and the pack's synonym map, plus whatever the caller adds (rules,
defaults, transforms, guard).

Domain packs do not carry JsonLogic rules yet (`DomainPack` has no field for them), so
rules are passed in here until the pack format grows one.
"""

from typing import Any

from compiler.ladder.contract import LadderContract
from schemas.typesystem import DomainPack


def contract_from_domain_pack(
    pack: DomainPack, entity_schema_id: str, **extra: Any
) -> LadderContract:
    """Build the contract for `entity_schema_id` of `pack`; `extra` sets other contract fields.

    Raises:
        KeyError: the pack has no entity schema of that id.
        ValueError: the resulting contract is invalid (see LadderContract).
    """
    for entity in pack.entity_schemas:
        if entity.entity_schema_id == entity_schema_id:
            fields: dict[str, Any] = {"json_schema": entity.json_schema, "synonyms": pack.synonyms}
            fields.update(extra)
            return LadderContract.model_validate(fields)
    known = ", ".join(e.entity_schema_id for e in pack.entity_schemas)
    raise KeyError(
        f"domain pack {pack.domain_pack_id!r} has no entity {entity_schema_id!r} (it has {known})"
    )
