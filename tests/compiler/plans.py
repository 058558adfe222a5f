"""Small plan-dict builders shared by the compiler tests.

Steps pin their domain/workflow packs (to none) and their policy, so Pass B's text scoring
never decides what a test is about; tests override any field with keyword arguments.
"""

from __future__ import annotations

import copy
from typing import Any

ALLOW_NORMALIZERS = "strict.allow-normalizers.v1"
FAIL_CLOSED = "strict.fail-closed.v1"
GENERIC_ALLOWED = "generic.inference-allowed.v1"


def step(key: str, *, out: str | None = None, **fields: Any) -> dict[str, Any]:
    """One code step writing `out` (default output/<key>.json); `fields` override anything."""
    base: dict[str, Any] = {
        "step_key": key,
        "label": f"Step {key}",
        "objective": f"MUST produce the output of {key}.",
        "expected_outputs": [{"path": out or f"output/{key}.json"}],
        "success_criteria": f"the output of {key} exists",
        "domain_pack_ids": [],
        "workflow_pack_ids": [],
        "policy_profile_id": ALLOW_NORMALIZERS,
    }
    base.update(fields)
    return base


def output(slot: str, entity: str | None = None, *kinds: str, **fields: Any) -> dict[str, Any]:
    """An abstract output: slot, entity and preferred kinds."""
    return {"slot": slot, "entity_schema_id": entity, "preferred_kind_keys": list(kinds), **fields}


def inp(slot: str, entity: str | None = None, *kinds: str, **fields: Any) -> dict[str, Any]:
    """An abstract input: slot, entity and accepted kinds."""
    return {"slot": slot, "entity_schema_id": entity, "accepted_kind_keys": list(kinds), **fields}


def plan(*steps: dict[str, Any], run_inputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A forge.plan/1 document; the inputs are deep-copied so tests may mutate the result."""
    return copy.deepcopy(
        {
            "schema_version": "forge.plan/1",
            "mission": "Exercise the compiler.",
            "run_inputs": run_inputs or [],
            "steps": list(steps),
        }
    )


def rows_step(key: str, *, deps: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    """A step producing generic.rows findings, consuming the findings of each dependency."""
    return step(
        key,
        depends_on=list(deps),
        abstract_inputs=[
            inp("findings", "generic.rows", "table.json_rows", from_step=d) for d in deps
        ],
        abstract_outputs=[output("findings", "generic.rows", "table.json_rows")],
        **fields,
    )
