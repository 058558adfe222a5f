"""Generated plans for benchmarks: N steps, each binding up to ten upstream outputs (rank 1)."""

import random
import string
from typing import Any

from schemas.bounds import OBJECTIVE_MAX, PROSE_MAX

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


def made_up_words(chars: int, source: int | random.Random) -> str:
    """`chars` characters of distinct made-up words (each a stem no cache has seen): the worst
    case for matching and compiling. `source`: a seed, or the Random to draw from."""
    rnd = source if isinstance(source, random.Random) else random.Random(source)
    out, size = [], 0
    while size < chars:
        word = "".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(5, 9)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def maximum_plan(steps: int, seed: int = 7) -> dict[str, Any]:
    """`steps` steps, each with the longest objective and criteria allowed, all distinct words."""
    rnd = random.Random(seed)
    raw = generated_plan(steps)
    raw["mission"] = made_up_words(OBJECTIVE_MAX, rnd)
    for step in raw["steps"]:
        lead = "MUST normalize timesheet rows. "
        step["objective"] = lead + made_up_words(OBJECTIVE_MAX - len(lead), rnd)
        step["success_criteria"] = made_up_words(PROSE_MAX, rnd)
    return raw
