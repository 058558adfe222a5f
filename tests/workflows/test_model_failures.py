"""Model-written steps that go wrong, each contained and reported per the failure model.

Code that fails, code that writes the wrong file, an exhausted tool budget, a request to a host
not on the allowlist, a tool the step may not call, the token budget exhausted mid-run, and a
provider that answers 429 once. Every model call crosses the real SDK to the local server.
"""

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from activities.compile.typelib import load_profiles
from schemas.budget import BudgetLimits, ExtendBudgetInput
from schemas.events import Actor
from schemas.scope import Scope
from tests.workflows.engine import wait_for_event
from tests.workflows.model_env import executor, model_engine, model_step, run_python, text
from tests.workflows.plans import plan
from workflows.run import CompiledRunWorkflow

OPS = Actor(id="ops-1", name="Ops", role="approver", kind="human")
GIVE_UP = text("I could not make the outputs verify.", thinking=True)


def profile(**changes: Any) -> dict[str, Any]:
    layers, _ = load_profiles()
    doc = layers.builtin["default"].model_dump(mode="json")
    doc["profile_id"] = "model-test"
    for section, values in changes.items():
        doc[section] = {**doc[section], **values}
    return doc


def _exec(headers: dict[str, str]) -> bool:
    return headers.get("x-forge-consumer") == "executor"


def executor_calls(server: Any) -> int:
    return sum(1 for h in server.headers if _exec(h))


def types(log: list[Any]) -> list[str]:
    return [e.type for e in log]


def executor_turns(log: list[Any], step_key: str) -> list[dict[str, Any]]:
    return [
        e.payload["detail"]
        for e in log
        if e.type == "tool.called.v1"
        and e.payload["channel"] == "executor"
        and e.payload["step_key"] == step_key
    ]


async def test_code_that_fails_ends_the_step_with_code_error(temporal_env, task_queue, tmp_path):
    script = [
        executor("a", run_python("raise RuntimeError('the join key is missing')")),
        executor("a", GIVE_UP),
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])))
        log = eng.services.events.list_events(run_id=result.run_id)
    error = result.steps["a"].error
    assert result.status == "failed" and error is not None
    assert error.failure_class == "CODE_ERROR"
    assert (
        "without verified outputs" in error.message and "the join key is missing" in error.message
    )
    [turn] = executor_turns(log, "a")
    assert turn["exit_code"] == 1 and "RuntimeError" in " ".join(turn["problems"])
    # Nothing was published: a failed step leaves no artifact behind.
    assert "artifact.published.v1" not in types(log)
    assert eng.services.events.list_published(result.run_id) == []


async def test_code_that_writes_the_wrong_file_is_refused(temporal_env, task_queue, tmp_path):
    wrong = "open('output/b.json', 'w').write('{\"ok\": true}')"
    script = [executor("a", run_python(wrong)), executor("a", GIVE_UP)]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])))
        log = eng.services.events.list_events(run_id=result.run_id)
    error = result.steps["a"].error
    assert result.status == "failed" and error is not None
    assert error.failure_class == "CONTRACT_VIOLATION"
    [turn] = executor_turns(log, "a")
    problems = " ".join(turn["problems"])
    assert "output/b.json" in problems and "output/a.json was not written" in problems
    assert eng.services.events.list_published(result.run_id) == []


async def test_an_exhausted_tool_budget_stops_the_loop(temporal_env, task_queue, tmp_path):
    script = [executor("a", run_python("raise SystemExit(3)"), times=0)]
    tight = profile(budgets={"tool_budget_per_step": 2})
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])), profile_document=tight)
        log = eng.services.events.list_events(run_id=result.run_id)
        calls = executor_calls(server)
    error = result.steps["a"].error
    assert error is not None and error.failure_class == "BUDGET_EXHAUSTED"
    assert "tool budget of 2" in error.message
    assert len(executor_turns(log, "a")) == 2
    assert calls == 2  # no model call after the budget is spent


@contextmanager
def local_site() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b'{"rate": 1.25}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


CALLS = """
import json, forge_bridge
out = {}
for name, method, url in %s:
    try:
        reply = forge_bridge.call("http.request", {"method": method, "url": url})
        out[name] = {"status": reply["status"], "body": reply["body"]}
    except forge_bridge.BridgeError as exc:
        out[name] = {"refused": exc.failure_class}
open("output/a.json", "w").write(json.dumps(out, sort_keys=True))
"""


async def test_requests_off_the_allowlist_are_blocked_and_recorded(
    temporal_env, task_queue, tmp_path
):
    with local_site() as port:
        site = f"http://127.0.0.1:{port}"
        calls = [
            ("allowed", "GET", f"{site}/rates"),
            ("other_host", "GET", "http://example.org/rates"),
            ("wrong_method", "POST", f"{site}/rates"),
        ]
        egress = {"allow": [{"domain": f"127.0.0.1:{port}", "methods": ["GET"]}]}
        script = [executor("a", run_python(CALLS % repr(calls)))]
        async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _s):
            result = await eng.run(
                plan(model_step("a", ["output/a.json"])), profile_document=profile(egress=egress)
            )
            log = eng.services.events.list_events(run_id=result.run_id)
            [ref] = result.outputs
            out = json.loads(
                eng.services.artifacts.read_bytes(Scope.default(), ref.sha256, 1 << 20)
            )
    assert result.status == "completed"
    assert out["allowed"]["status"] == 200 and "1.25" in out["allowed"]["body"]
    assert out["other_host"] == {"refused": "EGRESS_BLOCKED"}
    assert out["wrong_method"] == {"refused": "EGRESS_BLOCKED"}
    refused = [e.payload for e in log if e.type == "tool.refused.v1"]
    assert sorted(r["failure_class"] for r in refused) == ["EGRESS_BLOCKED", "EGRESS_BLOCKED"]
    assert any("example.org" in r["reason"] for r in refused)
    dispatched = [e for e in log if e.type == "tool.called.v1" and e.payload["channel"] == "bridge"]
    assert [e.payload["tool"] for e in dispatched] == ["http.request"]


async def test_a_tool_the_step_may_not_call_is_refused(temporal_env, task_queue, tmp_path):
    # The default profile has no egress: the executor's context withholds http.request.
    calls = [("fetch", "GET", "http://example.org/")]
    script = [executor("a", run_python(CALLS % repr(calls)))]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])))
        log = eng.services.events.list_events(run_id=result.run_id)
        [ref] = result.outputs
        out = json.loads(eng.services.artifacts.read_bytes(Scope.default(), ref.sha256, 1 << 20))
    assert out == {"fetch": {"refused": "TOOL_NOT_ALLOWED"}}
    [refusal] = [e.payload for e in log if e.type == "tool.refused.v1"]
    assert refusal["tool"] == "http.request" and "may not call" in refusal["reason"]
    assert not [e for e in log if e.type == "tool.called.v1" and e.payload["channel"] == "bridge"]


async def test_the_token_budget_exhausted_mid_run_blocks_until_extended(
    temporal_env, task_queue, tmp_path
):
    write_a = "open('output/a.json', 'w').write('{\"a\": 1}')"
    write_b = "open('output/b.json', 'w').write('{\"b\": 2}')"
    script = [
        executor("a", run_python(write_a, tokens=60_000)),
        executor("b", run_python(write_b, tokens=1_000)),
    ]
    doc = plan(
        model_step("a", ["output/a.json"]),
        model_step("b", ["output/b.json"], depends_on=["a"], input_file_paths=["output/a.json"]),
    )
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        handle = await eng.start(doc, budget=BudgetLimits(max_tokens=100_000))
        log = await wait_for_event(eng.services.events, handle.id, "budget.exhausted.v1")
        view = await handle.query(CompiledRunWorkflow.status)
        assert view.budget.status == "exhausted" and view.budget.blocked_steps == ["b"]
        assert {s.step_key: s.status for s in view.steps} == {"a": "done", "b": "pending"}
        # What step a spent is what the provider reported; b was never started.
        assert view.budget.spent.input_tokens >= 60_000
        assert "step.started.v1" not in [e.type for e in log if e.payload.get("step_key") == "b"]
        await handle.execute_update(
            CompiledRunWorkflow.extend_budget,
            ExtendBudgetInput(tokens=100_000, actor=OPS, reason="approved"),
        )
        result = await handle.result()
    assert result.status == "completed" and sorted(result.steps) == ["a", "b"]


async def test_a_rate_limited_provider_is_retried_by_temporal(temporal_env, task_queue, tmp_path):
    write = "open('output/a.json', 'w').write('{\"ok\": true}')"
    script = [
        {
            "when": {"consumer": "executor"},
            "error": {"status": 429, "message": "rate limited"},
        },
        executor("a", run_python(write)),
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])))
        log = eng.services.events.list_events(run_id=result.run_id)
        calls = executor_calls(server)
    assert result.status == "completed"
    assert result.steps["a"].attempts == 2
    [failed] = [e for e in log if e.type == "model.failed.v1"]
    assert failed.payload["failure_class"] == "MODEL_RATE_LIMITED"
    assert calls == 2  # the SDK's own retries are off: one HTTP request per attempt


STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
# Line 3 holds a credential: were the program run as recorded (masked), it would verify.
HOLDS_A_KEY = (
    "import json\n"
    "# a program that pastes a key instead of asking the bridge\n"
    f"KEY = {STRIPE_KEY!r}\n"
    "open('output/a.json', 'w').write(json.dumps({'ran': 'with a key'}))\n"
)
# A connection URL built from format fields: no credential, and it must run exactly as written.
TEMPLATE = r"""import json
U, P = "app", "from-the-bridge"
url = "postgresql://{U}:{P}\\@api.example.com/db"
open("output/a.json", "w").write(json.dumps({"template": url}))
"""


async def test_a_program_holding_a_credential_is_refused_not_run_and_the_model_is_told_why(
    temporal_env: Any, task_queue: str, tmp_path: Path
) -> None:
    script = [
        executor("a", run_python(HOLDS_A_KEY)),
        {
            "when": {"consumer": "executor", "last_contains": "program not run"},
            "response": run_python(TEMPLATE),
        },
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run(plan(model_step("a", ["output/a.json"])))
        log = eng.services.events.list_events(limit=100_000)
        [ref] = result.outputs
        out = json.loads(eng.services.artifacts.read_bytes(Scope.default(), ref.sha256, 1 << 20))
        codes = [
            eng.services.artifacts.read_bytes(Scope.default(), t["code_ref"]["sha256"], 1 << 20)
            for t in executor_turns(log, "a")
        ]
        requests = json.dumps(server.requests)
        asked = [r for r, h in zip(server.requests, server.headers, strict=True) if _exec(h)]
    assert result.status == "completed"
    # The second program ran unedited: its format fields and the backslash before "@" stand.
    assert out == {"template": "postgresql://{U}:{P}\\@api.example.com/db"}
    refused, ran = executor_turns(log, "a")
    # The first did not run (no exit code; its output was never written) and cost a turn.
    assert refused["exit_code"] is None and ran["exit_code"] == 0
    [problem] = refused["problems"]
    assert problem.startswith("program not run") and "(line 3: stripe-access-token)" in problem
    assert "forge_bridge.call" in problem
    # It is recorded masked, in the event and in the artifact store; the model was told why.
    assert "[REDACTED:stripe-access-token]" in refused["code"]
    assert codes == [refused["code"].encode(), TEMPLATE.encode()]
    assert len(asked) == 2
    told = json.dumps(asked[1]["messages"][-1])  # the tool result of the refusal
    assert "program not run" in told and "line 3: stripe-access-token" in told
    everything = requests + "\n".join(e.model_dump_json() for e in log)
    assert STRIPE_KEY not in everything
    masked_calls = [
        e
        for e in log
        if e.type == "guard.masked.v1" and e.payload["event_type"] == "model.called.v1"
    ]
    assert [f["detector"] for e in masked_calls for f in e.payload["findings"]] == [
        "stripe-access-token"
    ]
