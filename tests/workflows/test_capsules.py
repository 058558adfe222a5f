"""Capsules end to end: a proven run extracted, then run on new data through the same engine.

Real parts throughout: the Temporal dev server, bubblewrap, the stores, and for model runs the
real `anthropic` SDK against the local Messages server, whose request count shows what a
sealed replay costs (nothing) and what a structural run costs (its fresh step only).
"""

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle

from activities.capsules.prepare_run import CapsuleRun, InputLocationRefused, prepare_capsule_run
from compiler.plan.params import ParameterInvalid
from schemas.error_codes import ErrorCode
from schemas.run import RunResult
from schemas.scope import Scope
from schemas.tenant_settings import TenantSettings
from tests.support.errors import raises_code
from tests.workflows.engine import BILLING, Engine, billing_plan, engine
from tests.workflows.model_env import executor, model_engine, run_python, text
from tests.workflows.plans import code_step
from tests.workflows.test_model_runs import OBJECTIVE, PLAN
from workers.services import runs
from workers.services.capsule_runs import input_policy
from workers.services.capsules import CapsuleServices, extract_run
from workflows.run import CompiledRunWorkflow

SCOPE = Scope.default()


def billing_data(tmp: Path, seed: int) -> dict[str, Path]:
    sys.path.insert(0, str(BILLING))
    try:
        import generate  # examples/billing-audit/generate.py
    finally:
        sys.path.remove(str(BILLING))
    data = tmp / f"seed-{seed}"
    generate.generate(data, seed=seed)
    return {
        "time_entries": data / "time_entries.csv",
        "rate_cards": data / "rate_cards.csv",
        "contracts": data / "contracts.json",
    }


def services(eng: Engine) -> CapsuleServices:
    from activities.compile.typelib import load_library

    return CapsuleServices(
        events=eng.services.events,
        artifacts=eng.services.artifacts,
        capsules=eng.services.capsules,
        library=load_library(eng.settings.packs_path),
    )


def prepare(
    eng: Engine,
    ref: str,
    inputs: Mapping[str, Path | str],
    *,
    roots: tuple[Path, ...] = (),
    params: dict[str, str] | None = None,
    fresh: list[str] | None = None,
    **settings: Any,
) -> CapsuleRun:
    """prepare_capsule_run on the engine's stores; `roots` and `settings` adjust its Settings."""
    update = {**({"input_roots": roots} if roots else {}), **settings}
    return prepare_capsule_run(
        eng.services.capsules,
        eng.services.artifacts,
        input_policy(
            eng.settings.model_copy(update=update), TenantSettings(tenant_id=SCOPE.tenant)
        ),
        SCOPE,
        ref,
        run_id=runs.new_run_id(SCOPE.tenant),
        inputs={k: str(v) for k, v in inputs.items()},
        params=params or {},
        fresh=fresh or [],
    )


async def run_capsule(
    eng: Engine,
    ref: str,
    inputs: dict[str, Path],
    roots: tuple[Path, ...] = (),
    *,
    params: dict[str, str] | None = None,
    fresh: list[str] | None = None,
    **settings: Any,
) -> tuple[WorkflowHandle[CompiledRunWorkflow, RunResult], RunResult]:
    prepared = prepare(eng, ref, inputs, roots=roots, params=params, fresh=fresh, **settings)
    handle = await runs.start_run(eng.client, eng.settings, prepared.run)
    return handle, await handle.result()


def output(eng: Engine, result: RunResult, path: str) -> Any:
    [ref] = [r for r in result.outputs if r.path == path]
    data = eng.services.artifacts.read_bytes(SCOPE, ref.sha256, 50_000_000)
    return json.loads(data) if path.endswith(".json") else data.decode()


async def activity_types(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


async def test_the_billing_capsule_finds_the_answer_key_of_new_data(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        source = await eng.run(billing_plan(), billing_data(tmp_path, 2))
        assert source.status == "completed", source
        version = extract_run(services(eng), SCOPE, source.run_id, "billing")
        assert (version.version, version.created) == (1, True)
        assert {i.name for i in version.content.inputs} == {
            "time_entries",
            "rate_cards",
            "contracts",
        }
        [entries] = [i for i in version.content.inputs if i.name == "time_entries"]
        assert "hours" in {c.name for c in entries.columns}  # observed by the preflight receipt
        # Extracting the same run again finds the same version: nothing is added.
        again = extract_run(services(eng), SCOPE, source.run_id, "billing")
        assert (again.version, again.created, again.capsule_hash) == (
            1,
            False,
            version.capsule_hash,
        )
        fresh_data = billing_data(tmp_path, 7)
        handle, result = await run_capsule(eng, "billing", fresh_data, (tmp_path,))
        assert result.status == "completed", result
        found = output(eng, result, "output/discrepancies.json")
        key = json.loads((tmp_path / "seed-7" / "answer_key.json").read_text())
        old_key = json.loads((tmp_path / "seed-2" / "answer_key.json").read_text())
        assert sorted((d["entry_id"], d["kind"]) for d in found) == sorted(
            (d["entry_id"], d["kind"]) for d in key
        )
        assert key != old_key  # new data, not the source run's answer
        # The same engine, without its front end: no recipe match, no compile passes.
        scheduled = await activity_types(handle)
        assert "capsule__instantiate" in scheduled
        assert not {"recipes__match", "compile__passes", "compile__plan"} & set(scheduled)
        events = eng.services.events.list_events(run_id=result.run_id)
        [started] = [e for e in events if e.type == "run.started.v1"]
        assert started.payload["capsule"] == {
            "name": "billing",
            "version": 1,
            "capsule_hash": version.capsule_hash,
            "mode": "sealed",
            "fresh": [],
        }
        assert result.budget.spent.model_calls == 0
        extracted = eng.services.events.list_events(type="capsule.extracted.v1")
        assert [e.payload["version"] for e in extracted] == [1]  # the no-op wrote nothing


async def test_bad_parameters_are_refused_before_anything_starts(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        source = await eng.run(billing_plan(), billing_data(tmp_path, 2))
        extract_run(services(eng), SCOPE, source.run_id, "billing")
        good = billing_data(tmp_path, 3)
        before = len(eng.services.events.list_events(limit=1_000_000))
        no_hours = tmp_path / "no_hours.csv"
        lines = good["time_entries"].read_text().splitlines()
        header = lines[0].split(",")
        drop = header.index("hours")
        no_hours.write_text(
            "\n".join(",".join(c for i, c in enumerate(r.split(",")) if i != drop) for r in lines)
        )
        cases: list[tuple[dict[str, Path | str], type[Exception], str]] = [
            ({k: v for k, v in good.items() if k != "contracts"}, ParameterInvalid, "contracts"),
            ({**good, "time_entries": no_hours}, ParameterInvalid, "missing column(s) hours"),
            ({**good, "extra": good["contracts"]}, ParameterInvalid, "no input 'extra'"),
            ({**good, "contracts": "/etc/hostname"}, InputLocationRefused, "outside the input"),
            ({**good, "contracts": "ftp://x/y.json"}, InputLocationRefused, "ftp://"),
            ({**good, "contracts": "s3://elsewhere/c.json"}, InputLocationRefused, "elsewhere"),
            ({**good, "contracts": "file:///etc/hostname"}, InputLocationRefused, "outside"),
        ]
        roots = (tmp_path,)
        for given, error, says in cases:
            with pytest.raises(error) as caught:
                prepare(eng, "billing", given, roots=roots)
            assert says in str(caught.value), (says, str(caught.value))
        with pytest.raises(ParameterInvalid, match="no parameter|not a parameter|unknown"):
            prepare(eng, "billing", good, roots=roots, params={"threshold": "3"})
        with raises_code(
            ErrorCode.CAPSULE_REFUSED, match="--fresh find_discrepancies: not a model-coded"
        ):
            prepare(eng, "billing", good, roots=roots, fresh=["find_discrepancies"])
        # Nothing was started: no run, no event.
        assert len(eng.services.events.list_events(limit=1_000_000)) == before
        # Refused extractions, each with its reason.
        with raises_code(
            ErrorCode.CAPSULE_REFUSED, match="no step of run .* read a parameter 'cutoff'"
        ):
            extract_run(services(eng), SCOPE, source.run_id, "billing", params={"cutoff": "string"})
        with raises_code(ErrorCode.CAPSULE_REFUSED, match="not model-written code"):
            extract_run(
                services(eng), SCOPE, source.run_id, "billing", structural=["render_report"]
            )
        with raises_code(ErrorCode.CAPSULE_REFUSED, match="no run 'nope' for tenant"):
            extract_run(services(eng), SCOPE, "nope", "billing")
        other = Scope(tenant="acme", project="default")
        with raises_code(ErrorCode.CAPSULE_REFUSED, match="for tenant 'acme'"):
            extract_run(services(eng), other, source.run_id, "billing")


def _sales(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("region,amount\n" + "".join(f"{r},{a}\n" for r, a in rows))
    return path


# The executor's first program fails (a wrong column); the second one is accepted. A sealed
# replay runs both, in order.
FIRST_TRY = "import csv\nrows = list(csv.DictReader(open('input/sales.csv')))\nrows[0]['amt']\n"
TOTALS = """
import csv
from collections import defaultdict
totals = defaultdict(float)
with open("input/sales.csv") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += float(row["amount"])
with open("output/totals.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["region", "revenue"])
    for region in sorted(totals):
        out.writerow([region, f"{totals[region]:.2f}"])
"""
SUMMARY = """
import csv
rows = list(csv.DictReader(open("output/totals.csv")))
lines = ["# Revenue by region", ""] + [f"- {r['region']}: {r['revenue']}" for r in rows]
open("output/summary.md", "w").write("\\n".join(lines) + "\\n")
"""
FRESH_SUMMARY = SUMMARY.replace("# Revenue by region", "# Revenue, written afresh")
SCRIPT = [
    {"when": {"consumer": "planner"}, "response": text(json.dumps(PLAN), thinking=True)},
    executor("totals", run_python(FIRST_TRY)),
    executor("totals", run_python(TOTALS)),
    executor("summary", run_python(SUMMARY)),
    executor("summary", run_python(FRESH_SUMMARY), times=0),
]


async def test_a_model_coded_run_replays_sealed_without_a_model_request(
    temporal_env, task_queue, tmp_path
):
    async with model_engine(temporal_env, tmp_path / "home", task_queue, SCRIPT) as (eng, server):
        sales = _sales(tmp_path / "sales.csv", [("north", "10.50"), ("south", "4.00")])
        ref = eng.services.artifacts.put_file(SCOPE, sales, logical_path="input/sales.csv")
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        source = await handle.result()
        assert source.status == "completed", source
        paid = server.request_count
        assert paid >= 4  # the planner and three executor turns at least
        version = extract_run(services(eng), SCOPE, source.run_id, "revenue")
        totals = next(p for p in version.content.programs if p.step_key == "totals")
        assert [c.verified for c in totals.cells] == [False, True]  # every cell, in order
        code = [
            eng.services.artifacts.read_bytes(SCOPE, c.code.sha256, 1 << 20).decode()
            for c in totals.cells
        ]
        assert code == [FIRST_TRY, TOTALS]
        new = _sales(tmp_path / "new.csv", [("east", "1.25"), ("east", "2.00"), ("west", "9.00")])
        _, sealed = await run_capsule(eng, "revenue", {"sales": new}, (tmp_path,))
        assert sealed.status == "completed", sealed
        assert server.request_count == paid  # a sealed replay asks no model anything
        assert output(eng, sealed, "output/totals.csv").splitlines() == [
            "region,revenue",
            "east,3.25",
            "west,9.00",
        ]
        assert "- west: 9.00" in output(eng, sealed, "output/summary.md")
        assert sealed.budget.spent.model_calls == 0
        replayed = [
            e
            for e in eng.services.events.list_events(run_id=sealed.run_id)
            if e.type == "tool.called.v1" and e.payload["detail"].get("replayed")
        ]
        assert [(e.payload["step_key"], e.payload["detail"]["turn"]) for e in replayed] == [
            ("totals", 1),
            ("totals", 2),
            ("summary", 1),
        ]
        # Structural: only the fresh step asks the executor for new code.
        _, structural = await run_capsule(
            eng, "revenue", {"sales": new}, (tmp_path,), fresh=["summary"]
        )
        assert structural.status == "completed", structural
        asked = server.requests[paid:]
        assert len(asked) == 1 and "Step summary:" in json.dumps(asked[0])
        assert "written afresh" in output(eng, structural, "output/summary.md")
        assert structural.steps["totals"].usage.tokens == 0
        assert structural.steps["summary"].usage.tokens > 0


OVER = """
import csv, json, forge_bridge
limit = forge_bridge.param("limit")
rows = [r for r in csv.DictReader(open("input/sales.csv")) if float(r["amount"]) > limit]
json.dump({"limit": limit, "regions": sorted(r["region"] for r in rows)},
          open("output/over.json", "w"))
"""
PARAM_PLAN = {
    "mission": "Regions that sold above a limit",
    "run_inputs": [{"name": "sales", "path": "input/sales.csv", "kind_key": "table.csv"}],
    "parameters": [{"name": "limit", "type": "number", "default": 5}],
    "steps": [code_step("over", OVER, ["output/over.json"], reads=["input/sales.csv"])],
}


async def test_two_values_of_a_scalar_parameter_give_different_outputs(
    temporal_env, task_queue, tmp_path
):
    sales = _sales(tmp_path / "sales.csv", [("north", "10.50"), ("south", "4.00"), ("east", "2")])
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        source = await eng.run(PARAM_PLAN, {"sales": sales}, params={"limit": 3})
        assert source.status == "completed", source
        version = extract_run(services(eng), SCOPE, source.run_id, "over-limit")
        [limit] = version.content.scalars
        assert (limit.name, limit.type, limit.default, limit.read_by) == (
            "limit",
            "number",
            3,
            ["over"],
        )
        assert version.content.parameter_schema["properties"]["limit"] == {
            "type": "number",
            "default": 3,
        }
        # An integer parameter instead: the extraction names it, a step read it.
        retyped = extract_run(
            services(eng), SCOPE, source.run_id, "over-limit", params={"limit": "integer"}
        )
        assert retyped.version == 2 and retyped.content.scalars[0].type == "integer"
        roots = (tmp_path,)
        _, low = await run_capsule(
            eng, "over-limit@1", {"sales": sales}, roots, params={"limit": "1"}
        )
        _, high = await run_capsule(
            eng, "over-limit@1", {"sales": sales}, roots, params={"limit": "8"}
        )
        _, default = await run_capsule(eng, "over-limit@1", {"sales": sales}, roots)
        assert output(eng, low, "output/over.json") == {
            "limit": 1,
            "regions": ["east", "north", "south"],
        }
        assert output(eng, high, "output/over.json") == {"limit": 8, "regions": ["north"]}
        assert output(eng, default, "output/over.json")["limit"] == 3
        with pytest.raises(ParameterInvalid, match="limit"):
            await run_capsule(eng, "over-limit@1", {"sales": sales}, roots, params={"limit": "x"})
        with pytest.raises(ParameterInvalid, match="limit"):
            await run_capsule(eng, "over-limit@2", {"sales": sales}, roots, params={"limit": "2.5"})
