"""Generated plans for benchmarks: N steps, each binding up to ten upstream outputs (rank 1)."""

from typing import Any

ENTITY = "billing.time_entry"
KIND = "table.json_rows"


def generated_plan(n_steps: int, fan_in: int = 10) -> dict[str, Any]:
    """A layered DAG: step i reads the outputs of the (up to) `fan_in` steps before it."""
    steps = []
    for i in range(n_steps):
        deps = [f"s{j}" for j in range(max(0, i - fan_in), i)]
        steps.append(
            {
                "step_key": f"s{i}",
                "label": f"Normalize batch {i}",
                "objective": f"MUST normalize timesheet batch {i} into canonical billing rows.",
                "depends_on": deps,
                "expected_outputs": [{"path": f"output/batch_{i}.json"}],
                "abstract_inputs": [
                    {
                        "slot": "normalized_rows",
                        "from_step": d,
                        "entity_schema_id": ENTITY,
                        "accepted_kind_keys": [KIND],
                    }
                    for d in deps
                ],
                "abstract_outputs": [
                    {
                        "slot": "normalized_rows",
                        "entity_schema_id": ENTITY,
                        "preferred_kind_keys": [KIND],
                    }
                ],
                "domain_pack_ids": ["billing-audit"],
                "workflow_pack_ids": ["normalize-transform"],
                "policy_profile_id": "strict.allow-normalizers.v1",
            }
        )
    return {"mission": f"benchmark plan of {n_steps} steps", "steps": steps}
