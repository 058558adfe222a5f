"""The governed evaluator in runs: evaluate steps, blocking verdicts, the ultra-effort review.

The evaluator is a separate model (the profile binds Sonnet to it, Opus to the executor); it
sees an evidence bundle and a rubric, never a producing conversation, and every verdict it gives
is validated against its JSON Schema and persisted as a proof.
"""

import json

from compiler.recipes import build_plan, load_library
from compiler.recipes.candidate import DOUBT_RUBRIC, candidate_from_plan, with_verification
from compiler.recipes.effort import EFFORT_POLICIES
from schemas.evaluator import EVALUATION_PROOF
from schemas.scope import Scope
from tests.workflows.model_env import executor, model_engine, model_step, run_python, text, verdict
from tests.workflows.plans import code_step, plan

REPORT = "# Findings\\nThe ledger total is 42, taken from input/ledger.csv.\\n"
RUBRIC = "the report names the source of every number"


def report_plan(enforcement: str = "block") -> dict:
    return plan(
        code_step(
            "draft", f"open('output/report.md', 'w').write({REPORT!r})", ["output/report.md"]
        ),
        {
            **model_step("judge", ["output/judge.verdict.json"]),
            "kind": "evaluate",
            "depends_on": ["draft"],
            "input_file_paths": ["output/report.md"],
            "evaluation": {
                "derived": ["output/report.md"],
                "rubric": [RUBRIC],
                "enforcement": enforcement,
            },
        },
    )


def proofs(log: list) -> list[dict]:
    return [e.payload for e in log if e.type == EVALUATION_PROOF]


async def test_an_evaluate_step_judges_its_bundle_without_code(temporal_env, task_queue, tmp_path):
    script = [{"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC]))}]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run(report_plan())
        log = eng.services.events.list_events(run_id=result.run_id)
        outputs = {r.path: r for r in result.outputs}
        written = json.loads(
            eng.services.artifacts.read_bytes(
                Scope.default(), outputs["output/judge.verdict.json"].sha256, 1 << 20
            )
        )
        [request] = server.requests
    assert result.status == "completed"
    assert written["verdict"] == "pass" and written["criteria"][0]["criterion"] == RUBRIC
    [proof] = proofs(log)
    assert proof["model_call_id"] == written["model_call_id"]
    assert proof["bundle_sha256"] == written["bundle_sha256"]
    # The evaluator read the artifact itself, on the evaluator's own model binding.
    assert request["model"] == "claude-sonnet-4-6"
    assert "The ledger total is 42" in json.dumps(request["messages"])
    assert not any(
        e.payload.get("channel") == "executor" for e in log if e.type == "tool.called.v1"
    )


async def test_a_failing_blocking_verdict_fails_the_step(temporal_env, task_queue, tmp_path):
    script = [{"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC], "fail"))}]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(report_plan())
    error = result.steps["judge"].error
    assert result.status == "failed" and error is not None
    assert error.failure_class == "EVALUATION_FAILED" and RUBRIC in error.message
    assert result.steps["draft"].status == "done"


async def test_a_report_only_verdict_is_recorded_but_does_not_block(
    temporal_env, task_queue, tmp_path
):
    script = [{"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC], "fail"))}]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(report_plan("report"))
        log = eng.services.events.list_events(run_id=result.run_id)
    assert result.status == "completed"
    [proof] = proofs(log)
    assert proof["verdict"] == "fail" and proof["passed"] and proof["enforcement"] == "report"


async def test_a_verdict_that_breaks_its_schema_is_asked_again(temporal_env, task_queue, tmp_path):
    bad = json.dumps({"verdict": "great", "summary": "fine"})
    script = [
        {"when": {"consumer": "evaluator"}, "response": text(bad)},
        {"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC]))},
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        result = await eng.run(report_plan())
        second = json.dumps(server.requests[1]["messages"])
    assert result.status == "completed"
    assert "does not match the required JSON schema" in second and "criteria" in second


async def test_code_that_ignores_a_blocking_verdict_still_fails(temporal_env, task_queue, tmp_path):
    code = (
        "import forge_bridge\n"
        "open('output/a.md', 'w').write('# draft\\n')\n"
        "forge_bridge.call('artifact.evaluate', {'derived': ['output/a.md'], "
        f"'rubric': [{RUBRIC!r}], 'enforcement': 'block'}})\n"
    )
    script = [
        executor("a", run_python(code)),
        {"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC], "fail"))},
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, _server):
        result = await eng.run(plan(model_step("a", ["output/a.md"])))
    error = result.steps["a"].error
    assert error is not None and error.failure_class == "EVALUATION_FAILED"
    assert result.outputs == []


ULTRA = "do an exhaustive, thorough code review of my pull request and double check everything"


async def test_an_ultra_plan_ends_with_a_fresh_context_review(temporal_env, task_queue, tmp_path):
    library = load_library("stdlib/recipes")
    recipe_plan = with_verification(
        build_plan(["code-review"], library), EFFORT_POLICIES["ultra"], library
    )
    candidate = candidate_from_plan(recipe_plan, library, ULTRA)
    *producers, review = candidate.steps
    script = [
        executor(
            s.step_key,
            run_python(
                f"open({s.expected_outputs[0].path!r}, 'w').write('# {s.label}\\nchecked\\n')"
            ),
        )
        for s in producers
    ]
    # Cycle 1 is inconclusive, cycle 2 (a fresh call, same bundle) finds nothing non-trivial.
    script += [
        {"when": {"consumer": "evaluator"}, "response": text(verdict(list(DOUBT_RUBRIC), r))}
        for r in ("uncertain", "pass")
    ]
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        handle = await eng.start_objective(ULTRA)
        result = await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
        evaluator_requests = [
            r
            for r, h in zip(server.requests, server.headers, strict=True)
            if h.get("x-forge-consumer") == "evaluator"
        ]
    assert result.recipes.effort is not None and result.recipes.effort.tier == "ultra"
    assert result.status == "completed", result.steps
    assert review.kind == "evaluate" and review.step_key in result.steps
    cycles = proofs(log)
    assert [p["verdict"] for p in cycles] == ["uncertain", "pass"]
    assert all(p["review_of"] for p in cycles)
    # Fresh context: each review call is one user message holding the artifacts, never the
    # executor's conversation (no tool calls, no programs).
    for request in evaluator_requests:
        assert len(request["messages"]) == 1 and "run_python" not in json.dumps(request)
        assert all(s.expected_outputs[0].path in json.dumps(request) for s in producers)
