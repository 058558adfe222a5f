"""End to end with a model: objective -> plan -> compile -> model-written code -> verified outputs.

Every model call goes through the real `anthropic` SDK to the local Messages server: the planner
fills the Pass A template, the resolver settles the steps the deterministic Pass B could not,
the skill resolver chooses among discovered skills, each code step's executor writes Python
that runs in bubblewrap, and that code calls the governed evaluator through the tool bridge.
"""

import json

import pytest
from temporalio.client import WorkflowFailureError

from compiler.context.manifests import STAGES
from schemas.evaluator import EVALUATION_PROOF
from schemas.scope import Scope
from tests.workflows.model_env import (
    API_KEY,
    executor,
    model_engine,
    model_step,
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
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        view = await handle.query(CompiledRunWorkflow.status)
        log = eng.services.events.list_events(run_id=handle.id)
        outputs = {
            r.path: eng.services.artifacts.read_bytes(Scope.default(), r.sha256, 1 << 20).decode()
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
    # Each call names the compiled context its prompt came from, every stage hashed (seed 002).
    for e in called:
        assert e.payload["context_hash"].startswith("sha256:")
        assert list(e.payload["stage_hashes"]) == list(STAGES)
        assert all(h.startswith("sha256:") for h in e.payload["stage_hashes"].values())
    # The evaluator's proof: the model call, the bundle digest, the verdict per criterion.
    [proof] = [e for e in log if e.type == EVALUATION_PROOF]
    assert proof.payload["verdict"] == "pass" and proof.payload["passed"]
    assert proof.payload["model_call_id"] in {e.event_id for e in called}
    # One name for a model: the proof names it as its model.called event does (the binding ref).
    [graded] = [e for e in called if e.event_id == proof.payload["model_call_id"]]
    assert proof.payload["model"] == graded.payload["model"]
    assert all(e.payload["provider"] == "anthropic" for e in called)  # the SDK, priced as such
    assert proof.payload["bundle_sha256"].startswith("sha256:")
    assert [c["criterion"] for c in proof.payload["criteria"]] == [RUBRIC]
    bridge = [e for e in log if e.type == "tool.called.v1" and e.payload["channel"] == "bridge"]
    assert sorted(e.payload["tool"] for e in bridge) == ["artifact.evaluate", "log.note"]
    # The program that produced the accepted outputs is stored with the step's artifacts.
    [done] = [e for e in log if e.type == "step.completed.v1" and e.payload["step_key"] == "totals"]
    code = eng.services.artifacts.read_bytes(
        Scope.default(), done.payload["code_ref"]["sha256"], 1 << 20
    ).decode()
    assert code == TOTALS_CODE
    # Spend is what the provider reported: every call of the run, planning and Pass B/D too.
    spent = result.budget.spent
    assert spent.model_calls == 6
    assert spent.input_tokens == sum(e.payload["input_tokens"] for e in called)
    assert spent.cost_usd == pytest.approx(sum(e.payload["cost_usd"] for e in called))


__all__ = ["think"]


ONE_STEP = {
    "mission": "Revenue per region",
    "steps": [{**PLAN["steps"][0]}],
}


async def test_a_malformed_plan_is_repaired_within_bounds(temporal_env, task_queue, tmp_path):
    broken = {"mission": "Revenue per region", "steps": [{**PLAN["steps"][0], "step_key": "T 1"}]}
    script = [
        {"when": {"consumer": "planner"}, "response": text(json.dumps(broken), thinking=True)},
        {"when": {"consumer": "repair"}, "response": text(json.dumps(ONE_STEP), thinking=True)},
        executor("totals", run_python(TOTALS_CODE)),
        {"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC]))},
    ]
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, server):
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
        repair_request = next(
            r
            for r, h in zip(server.requests, server.headers, strict=True)
            if h.get("x-forge-consumer") == "repair"
        )
    assert result.status == "completed" and list(result.steps) == ["totals"]
    [drafted] = [e for e in log if e.type == "plan.drafted.v1"]
    assert drafted.payload["repairs"] == 1
    # The repair call is told exactly what was wrong with the first answer.
    assert "step_key" in json.dumps(repair_request["messages"]) and "T 1" in json.dumps(
        repair_request["messages"]
    )


async def test_a_plan_that_stays_malformed_is_rejected_with_reasons(
    temporal_env, task_queue, tmp_path
):
    script = [
        {"when": {"consumer": "planner"}, "response": text("I would rather not.", thinking=True)},
        {
            "when": {"consumer": "repair"},
            "times": 0,
            "response": text('{"mission": ""}', thinking=True),
        },
    ]
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, server):
        handle = await eng.start_objective(OBJECTIVE)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
        consumers = [h.get("x-forge-consumer") for h in server.headers]
    assert "rejected after 2 repairs" in str(info.value.cause)
    assert consumers == ["planner", "repair", "repair"]
    [rejected] = [e for e in log if e.type == "plan.rejected.v1"]
    assert any("not a filled plan template" in r for r in rejected.payload["reasons"])
    [failed] = [e for e in log if e.type == "run.failed.v1"]
    assert failed.payload["stage"] == "plan"
    assert not [e for e in log if e.type == "run.compiled.v1"]


SKILL_CODE = """
import csv, subprocess
ran = subprocess.run(
    ["python", "/skills/tabular-toolkit/scripts/table.py", "aggregate", "input/sales.csv",
     "--group-by", "region", "--agg", "sum:amount", "--out", "work/agg.csv"],
    capture_output=True, text=True,
)
if ran.returncode:
    raise SystemExit(ran.stderr)
rows = list(csv.DictReader(open("work/agg.csv")))
with open("output/totals.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["region", "revenue"])
    for r in sorted(rows, key=lambda r: r["region"]):
        total = next(v for k, v in r.items() if k != "region")
        out.writerow([r["region"], f"{float(total):.2f}"])
"""


async def test_a_chosen_skill_is_bound_and_mounted_read_only(temporal_env, task_queue, tmp_path):
    script = [
        {"when": {"consumer": "planner"}, "response": text(json.dumps(ONE_STEP), thinking=True)},
        {
            "when": {"consumer": "skill_resolver"},
            "response": text(
                json.dumps(
                    {"steps": [{"step_key": "totals", "skill_ids": ["tabular-toolkit", "no-such"]}]}
                )
            ),
        },
        executor("totals", run_python(SKILL_CODE)),
    ]
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, server):
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        [out] = result.outputs
        totals = eng.services.artifacts.read_bytes(Scope.default(), out.sha256, 1 << 20).decode()
        executor_request = next(
            r
            for r, h in zip(server.requests, server.headers, strict=True)
            if h.get("x-forge-consumer") == "executor"
        )
    assert result.status == "completed", result.steps
    assert totals.splitlines()[1:] == ["east,7.00", "north,12.75", "south,4.00"]
    # The packet names the bound skill and where its files are; the hallucinated id was dropped.
    packet = json.dumps(executor_request["messages"])
    assert "tabular-toolkit" in packet and "/skills/tabular-toolkit/scripts/table.py" in packet
    assert "no-such" not in packet


async def test_a_repair_attempt_carries_the_previous_failure(temporal_env, task_queue, tmp_path):
    empty = "open('output/a.json', 'w').write('')"
    fixed = "open('output/a.json', 'w').write('{\"ok\": true}')"
    step = model_step("a", ["output/a.json"], policy_profile_id="strict.allow-normalizers.v1")
    script = [
        {
            "when": {"consumer": "executor", "contains": "Repair context"},
            "response": run_python(fixed),
        },
        executor("a", run_python(empty)),
        executor("a", text("It is written.", thinking=True)),
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run({"mission": "m", "run_inputs": [], "steps": [step]})
        repair = [
            json.dumps(r["messages"])
            for r, h in zip(server.requests, server.headers, strict=True)
            if h.get("x-forge-consumer") == "executor"
        ][-1]
    assert result.status == "completed" and result.steps["a"].attempts == 2
    # Same contract, a fresh conversation that starts from the failure class, what is missing
    # and the last program.
    assert "OUTPUT_SHAPE" in repair and "output/a.json is empty" in repair
    assert "write('')" in repair


async def test_the_api_key_never_reaches_the_sandbox_or_the_record(
    temporal_env, task_queue, tmp_path, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)  # as a worker started from a shell has it
    leak = "import json, os\nopen('output/a.json', 'w').write(json.dumps(dict(os.environ)))\n"
    script = [executor("a", run_python(leak))]
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, _s):
        result = await eng.run(
            {"mission": "m", "run_inputs": [], "steps": [model_step("a", ["output/a.json"])]}
        )
        log = eng.services.events.list_events(run_id=result.run_id)
        [out] = result.outputs
        env = json.loads(eng.services.artifacts.read_bytes(Scope.default(), out.sha256, 1 << 20))
    assert result.status == "completed"
    assert not any("ANTHROPIC" in k or API_KEY in v for k, v in env.items())
    assert API_KEY not in json.dumps([e.model_dump(mode="json") for e in log])
    stored = [p.read_bytes() for p in (tmp_path / "home").rglob("*") if p.is_file()]
    assert not any(API_KEY.encode() in data for data in stored)
