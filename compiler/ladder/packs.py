"""A `LadderContract` for one entity of a domain pack.

Its JSON Schema, the pack's synonym map and the entity's JsonLogic rules (L5), plus whatever
the caller adds (more rules, defaults, transforms, guard).
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
            fields: dict[str, Any] = {
                "json_schema": entity.json_schema,
                "synonyms": pack.synonyms,
                "rules": [r.model_dump() for r in entity.rules],
            }
            extra_rules = list(extra.pop("rules", []))
            fields.update(extra)
            fields["rules"] = [*fields["rules"], *extra_rules]
            return LadderContract.model_validate(fields)
    known = ", ".join(e.entity_schema_id for e in pack.entity_schemas)
    raise KeyError(
        f"domain pack {pack.domain_pack_id!r} has no entity {entity_schema_id!r} (it has {known})"
    )
