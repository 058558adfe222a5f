"""End to end with a model: objective -> plan -> compile -> model-written code -> verified outputs.

Every model call goes through the real `anthropic` SDK to the local Messages server: the planner
fills the Pass A template, the resolver settles the steps the deterministic Pass B could not,
the skill resolver chooses among discovered skills, each code step's executor writes Python
that runs in bubblewrap, and that code calls the governed evaluator through the tool bridge.
"""

import json

from schemas.evaluator import EVALUATION_PROOF
from tests.workflows.model_env import (
    executor,
    model_engine,
    run_python,
    text,
    think,
    verdict,
)
from workflows.run import CompiledRunWorkflow

OBJECTIVE = "compute revenue per region from the sales table and write a short summary"
SALES = "region,amount\nnorth,10.50\nsouth,4.00\nnorth,2.25\neast,7.00\n"
RUBRIC = "every region of the source appears exactly once with its summed amount"

PLAN = {
    "mission": "Revenue per region with a checked summary",
    "steps": [
        {
            "step_key": "totals",
            "label": "Compute revenue per region",
            "objective": "MUST sum the amount column per region of input/sales.csv",
            "depends_on": [],
            "input_file_paths": ["input/sales.csv"],
            "expected_outputs": [{"path": "output/totals.csv", "role": "primary"}],
            "success_criteria": "one row per region with the summed amount",
            "kind": "code",
        },
        {
            "step_key": "summary",
            "label": "Write the revenue summary",
            "objective": "MUST write a markdown summary of output/totals.csv",
            "depends_on": ["totals"],
            "input_file_paths": ["output/totals.csv"],
            "expected_outputs": [{"path": "output/summary.md", "role": "report"}],
            "success_criteria": "names every region and its revenue",
            "kind": "code",
        },
    ],
}

RESOLVED = {
    "steps": [
        {
            "step_key": "totals",
            "domain_pack_id": "finance-analysis",
            "workflow_pack_id": "analyze-score-rank",
            "confidence": 0.8,
            "reason": "sums amounts per region",
        },
        {
            "step_key": "summary",
            "domain_pack_id": "finance-analysis",
            "workflow_pack_id": "render-report",
            "confidence": 0.7,
            "reason": "a written summary",
        },
    ]
}

TOTALS_CODE = f"""
import csv, json
from collections import defaultdict
import forge_bridge

totals = defaultdict(float)
with open("input/sales.csv") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += float(row["amount"])
with open("output/totals.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["region", "revenue"])
    for region in sorted(totals):
        out.writerow([region, f"{{totals[region]:.2f}}"])
result = forge_bridge.call("artifact.evaluate", {{
    "derived": ["output/totals.csv"], "source": ["input/sales.csv"],
    "rubric": [{RUBRIC!r}], "enforcement": "block"}})
forge_bridge.call("log.note", {{"text": "totals judged " + result["verdict"]}})
print(json.dumps(result))
"""

SUMMARY_CODE = """
import csv
rows = list(csv.DictReader(open("output/totals.csv")))
lines = ["# Revenue by region", ""] + [f"- {r['region']}: {r['revenue']}" for r in rows]
open("output/summary.md", "w").write("\\n".join(lines) + "\\n")
"""

SCRIPT = [
    {
        "when": {"consumer": "planner"},
        "response": text(json.dumps(PLAN), thinking=True),
    },
    {"when": {"consumer": "resolver"}, "response": text(json.dumps(RESOLVED))},
    {
        "when": {"consumer": "skill_resolver"},
        "response": text(json.dumps({"steps": [{"step_key": "totals", "skill_ids": []}]})),
    },
    executor("totals", run_python(TOTALS_CODE)),
    {"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC]))},
    executor("summary", run_python(SUMMARY_CODE)),
]


async def test_an_objective_runs_end_to_end_through_the_model(temporal_env, task_queue, tmp_path):
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, SCRIPT) as (eng, server):
        ref = eng.services.artifacts.put_file(sales, logical_path="input/sales.csv")
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        view = await handle.query(CompiledRunWorkflow.status)
        log = eng.services.events.list_events(run_id=handle.id)
        outputs = {
            r.path: eng.services.artifacts.read_bytes(r.sha256, 1 << 20).decode()
            for r in result.outputs
        }
        consumers = [h.get("x-forge-consumer") for h in server.headers]
    assert result.status == "completed", view
    assert view.order == ["totals", "summary"]
    # The outputs are what the model's code computed from the data, verified by the platform.
    assert outputs["output/totals.csv"].splitlines() == [
        "region,revenue",
        "east,7.00",
        "north,12.75",
        "south,4.00",
    ]
    assert "- north: 12.75" in outputs["output/summary.md"]
    # One planner call, one resolver call, one skill resolver call, one executor call per step
    # and the evaluator called from inside the sandboxed code.
    assert consumers == [
        "planner",
        "resolver",
        "skill_resolver",
        "executor",
        "evaluator",
        "executor",
    ]
    types = [e.type for e in log]
    assert "plan.drafted.v1" in types and "run.tagged.v1" in types
    called = [e for e in log if e.type == "model.called.v1"]
    assert len(called) == 6 and all(e.payload["input_tokens"] > 0 for e in called)
    assert all(e.prompt_hash and e.prompt_hash.startswith("sha256:") for e in called)
    # The evaluator's proof: the model call, the bundle digest, the verdict per criterion.
    [proof] = [e for e in log if e.type == EVALUATION_PROOF]
    assert proof.payload["verdict"] == "pass" and proof.payload["passed"]
    assert proof.payload["model_call_id"] in {e.event_id for e in called}
    assert proof.payload["bundle_sha256"].startswith("sha256:")
    assert [c["criterion"] for c in proof.payload["criteria"]] == [RUBRIC]
    bridge = [e for e in log if e.type == "tool.called.v1" and e.payload["channel"] == "bridge"]
    assert sorted(e.payload["tool"] for e in bridge) == ["artifact.evaluate", "log.note"]
    # The program that produced the accepted outputs is stored with the step's artifacts.
    [done] = [e for e in log if e.type == "step.completed.v1" and e.payload["step_key"] == "totals"]
    code = eng.services.artifacts.read_bytes(done.payload["code_ref"]["sha256"], 1 << 20).decode()
    assert code == TOTALS_CODE
    # Spend is what the provider reported, rolled up from the ledger.
    assert result.budget.spent.model_calls == 3  # the steps' own calls (plan/compile are not steps)


__all__ = ["think"]
