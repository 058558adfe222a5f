"""`loop:` steps (seed 004 §6): the workflow repeats the step's activity under its bound.

Each pass runs through the whole harness in a fresh workspace; the step reads which pass it is from
meta/iteration and leaves its done-note in work/note.md. Every pass is recorded
(step.iteration.v1 and a trail line) and the step's outputs are its last good pass's.
"""

import json

from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan

PASS = "n = int(open('meta/iteration').read())\n"


def looped(code: str, loop: dict[str, object]) -> dict[str, object]:
    step = code_step("sweep", PASS + code, ["output/found.json"])
    step["loop"] = loop
    return plan(step)


def iterations(eng, run_id):  # type: ignore[no-untyped-def]
    return [
        e.payload
        for e in eng.services.events.list_events(run_id=run_id)
        if e.type == "step.iteration.v1"
    ]


async def test_until_dry_stops_when_the_note_says_nothing_new(temporal_env, task_queue, tmp_path):
    code = (
        "open('output/found.json', 'w').write('{\"pass\": %d}' % n)\n"
        "note = 'no new findings' if n == 3 else f'found {n} new issues'\n"
        "open('work/note.md', 'w').write(note)\n"
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(looped(code, {"mode": "until-dry", "max": 5}))
        result = await handle.result()
        passes = iterations(eng, handle.id)
        [ref] = result.steps["sweep"].outputs
        content = json.loads(eng.services.artifacts.read_bytes(Scope.default(), ref.sha256, 1024))
    step = result.steps["sweep"]
    assert result.status == "completed" and step.status == "done"
    assert step.iterations == 3 and step.note == "no new findings"
    assert content == {"pass": 3}  # the last pass's output is the step's output
    assert [p["iteration"] for p in passes] == [1, 2, 3]
    assert [p["stopped"] for p in passes[:2]] == [None, None]
    assert "dry" in passes[2]["stopped"] and passes[1]["note"] == "found 2 new issues"
    trail = [e.summary for e in result.recipes.trail if e.step_key == "sweep"]
    assert len(trail) == 3 and "loop ended after 3 pass(es)" in trail[-1]


async def test_count_and_marker_loops_respect_their_bounds(temporal_env, task_queue, tmp_path):
    write = (
        "open('output/found.json', 'w').write('{\"ok\": 1}')\n"
        "open('work/note.md', 'w').write(f'pass {n}')\n"
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        counted = await eng.run(looped(write, {"mode": "count", "max": 2}))
        handle = await eng.start(
            looped(write, {"mode": "until-marker", "max": 3, "marker": "APPROVED"})
        )
        bounded = await handle.result()
        marker_passes = iterations(eng, handle.id)
    assert counted.steps["sweep"].iterations == 2 and counted.steps["sweep"].note == "pass 2"
    assert bounded.steps["sweep"].iterations == 3
    assert "reached its bound of 3" in marker_passes[-1]["stopped"]


async def test_a_failed_later_pass_keeps_the_last_good_results(temporal_env, task_queue, tmp_path):
    code = (
        "if n == 2:\n    raise SystemExit('pass 2 broke')\n"
        "open('output/found.json', 'w').write('{\"pass\": %d}' % n)\n"
        "open('work/note.md', 'w').write('found more')\n"
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(looped(code, {"mode": "until-dry", "max": 5}))
        result = await handle.result()
        passes = iterations(eng, handle.id)
        [ref] = result.steps["sweep"].outputs
        content = json.loads(eng.services.artifacts.read_bytes(Scope.default(), ref.sha256, 1024))
    assert result.status == "completed" and result.steps["sweep"].status == "done"
    assert result.steps["sweep"].iterations == 1 and content == {"pass": 1}
    assert passes[-1]["iteration"] == 2 and "pass 2 failed" in passes[-1]["stopped"]
