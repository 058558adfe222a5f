"""compiler/capsule/extract.py: a hand-built RunRecord around a plan the real compiler compiled.

No store, no Temporal: each case takes the record of a run that completed cleanly and breaks
one thing about it, to show the one refusal that names it (and, all at once, every refusal).
"""

import hashlib
import re
from functools import lru_cache
from typing import Any

import pytest

from compiler.capsule.extract import RunRecord, StepRun, extract
from compiler.capsule.seal import capsule_hash
from schemas.artifacts import ArtifactRef
from schemas.capsule import CodeCell
from schemas.compiled import CompiledPlan
from schemas.error_codes import ErrorCode
from schemas.receipts import FileReceipt, ParseValidation, Receipt
from tests.compiler.conftest import compile_raw
from tests.support.errors import raises_code
from tests.workflows.plans import code_step

RUN = "run-20261126-104500-abcdef"
OVER = (
    "import json, forge_bridge\n"
    "json.dump({'limit': forge_bridge.param('limit')}, open('output/over.json', 'w'))\n"
)
PLAN: dict[str, Any] = {
    "mission": "Regions over a limit, with a summary",
    "run_inputs": [{"name": "sales", "path": "input/sales.csv", "kind_key": "table.csv"}],
    "parameters": [{"name": "limit", "type": "number", "default": 5}],
    "steps": [
        code_step("over", OVER, ["output/over.json"], reads=["input/sales.csv"]),
        {
            "step_key": "summary",
            "label": "Write the summary",
            "objective": "MUST write a markdown summary of output/over.json",
            "depends_on": ["over"],
            "input_file_paths": ["output/over.json"],
            "expected_outputs": [{"path": "output/summary.md", "role": "report"}],
            "success_criteria": "names every region",
            "kind": "code",
        },
    ],
}
VALIDATORS = {"table.csv": "csv"}
SALES_SHA = "sha256:" + "5" * 64
COLUMNS = [
    {"name": "region", "type": "string", "null_count": 0},
    {"name": "amount", "type": "number", "null_count": 0},
]


@lru_cache(maxsize=1)
def compiled() -> CompiledPlan:
    return compile_raw(PLAN)


def ref(text: str, path: str) -> ArtifactRef:
    sha = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return ArtifactRef(artifact_id=sha, path=path, sha256=sha, size_bytes=len(text))


PLAN_REF = ref("the compiled plan", "meta/compiled.json")


def output(path: str, **fields: Any) -> FileReceipt:
    fields.setdefault("parse_validation", ParseValidation(ok=True))
    return FileReceipt(path=path, exists=True, size_bytes=10, sha256=SALES_SHA, **fields)


def step_run(key: str, **overrides: Any) -> StepRun:
    step = next(s for s in compiled().steps if s.step_key == key)
    outputs = [o.path for o in step.executable_contract_v2.step_outputs]
    pre_files = []
    if key == "over":
        pre_files = [
            FileReceipt(
                path="input/sales.csv",
                exists=True,
                size_bytes=30,
                sha256=SALES_SHA,
                kind_key="table.csv",
                schema_summary={"type": "table", "row_count": 2, "columns": COLUMNS},
            )
        ]
    receipt = {"step_id": key, "step_key": key, "contract_hash": step.contract_hash}
    post_files = overrides.pop("post_files", [output(p) for p in outputs])
    cells = (
        [
            CodeCell(turn=1, code=ref("print(1)\n", f"code/{key}/1.py"), verified=False),
            CodeCell(turn=2, code=ref("summary()\n", f"code/{key}/2.py"), verified=True),
        ]
        if step.backend == "sandbox.session"
        else []
    )
    fields: dict[str, Any] = {
        "step_key": key,
        "attempt": 1,
        "contract_hash": step.contract_hash,
        "preflight_ref": ref(f"pre {key}", f"meta/{key}/pre.json"),
        "postflight_ref": ref(f"post {key}", f"meta/{key}/post.json"),
        "preflight": Receipt(phase="preflight", files=pre_files, **receipt),
        "postflight": Receipt(phase="postflight", files=post_files, **receipt),
        "cells": cells,
        "params_read": ["limit"] if key == "over" else [],
    }
    fields.update(overrides)
    return StepRun(**fields)


def record(**overrides: Any) -> RunRecord:
    fields: dict[str, Any] = {
        "run_id": RUN,
        "outcome": "completed",
        "objective": None,
        "params": {"limit": 3},
        "steps": {"over": step_run("over"), "summary": step_run("summary")},
    }
    fields.update(overrides)
    return RunRecord(**fields)


def refused(rec: RunRecord, **options: Any) -> str:
    with raises_code(ErrorCode.CAPSULE_REFUSED) as caught:
        extract(compiled(), PLAN_REF, rec, validators=VALIDATORS, **options)
    message = str(caught.value)
    assert message.startswith(f"run {RUN} cannot become a capsule: ")
    assert "\n" not in message
    assert caught.value.code == "CAPSULE_REFUSED"
    return message


def with_step(key: str, **overrides: Any) -> RunRecord:
    return record(steps={**record().steps, key: step_run(key, **overrides)})


# ---- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["failed", "cancelled", "running"])
def test_a_run_that_did_not_complete_is_refused(outcome):
    message = refused(record(outcome=outcome))
    assert f"did not complete ({outcome})" in message


def test_a_step_without_a_completion_is_refused():
    message = refused(record(steps={"over": step_run("over")}))
    assert "step summary has no verified completion" in message


def test_an_output_that_did_not_parse_is_refused():
    bad = output(
        "output/over.json", parse_validation=ParseValidation(ok=False, error="line 1: not JSON")
    )
    message = refused(with_step("over", post_files=[bad]))
    assert "step over: output output/over.json did not verify (line 1: not JSON)" in message


def test_an_output_missing_from_the_postflight_is_refused():
    message = refused(with_step("over", post_files=[]))
    assert "step over: output output/over.json is not in its postflight receipt" in message


def test_an_undeclared_write_is_refused():
    files = [output("output/over.json"), output("output/stray.txt")]
    message = refused(with_step("over", post_files=files))
    assert "step over: its receipt shows an undeclared write to output/stray.txt" in message


def test_a_file_that_does_not_exist_is_not_a_write():
    gone = FileReceipt(path="output/stray.txt", exists=False)
    content = extract(
        compiled(),
        PLAN_REF,
        with_step("over", post_files=[output("output/over.json"), gone]),
        validators=VALIDATORS,
    )
    assert [p.step_key for p in content.programs] == ["over", "summary"]


def test_a_reused_step_is_refused():
    message = refused(record(reused={"over": "run-earlier"}))
    assert "step over was reused from run run-earlier, not run" in message


def test_a_contract_hash_mismatch_is_refused():
    other = "sha256:" + "0" * 64
    message = refused(with_step("over", contract_hash=other))
    sealed = next(s for s in compiled().steps if s.step_key == "over").contract_hash
    assert f"step over ran under contract {other}, the plan seals {sealed}" in message


def test_structural_on_a_frozen_step_is_refused():
    message = refused(record(), structural=["over"])
    assert "--structural over: the step runs sandbox.frozen, not model-written code" in message


def test_structural_on_an_unknown_step_is_refused():
    message = refused(record(), structural=["nope"])
    assert "--structural nope: no such step; steps: over, summary" in message


def test_a_param_nobody_read_is_refused():
    message = refused(record(), params={"cutoff": "string"})
    assert f"--param cutoff: no step of run {RUN} read a parameter 'cutoff'" in message
    assert "(parameters read: limit)" in message


def test_a_param_of_the_wrong_type_is_refused():
    message = refused(record(params={"limit": 2.5}), params={"limit": "integer"})
    assert "parameter limit: the run's value 2.5 is not integer" in message


def test_session_cells_that_did_not_verify_last_are_refused():
    cells = [CodeCell(turn=1, code=ref("x\n", "code/summary/1.py"), verified=False)]
    message = refused(with_step("summary", cells=cells))
    assert "step summary: the last program of its accepted attempt did not verify" in message
    message = refused(with_step("summary", cells=[]))
    assert "step summary: the programs of its accepted attempt were not recorded" in message


def test_every_reason_is_in_one_message():
    bad = output("output/over.json", parse_validation=ParseValidation(ok=False, error="truncated"))
    rec = record(
        outcome="failed",
        steps={"over": step_run("over", post_files=[bad, output("output/x.txt")])},
    )
    message = refused(rec, structural=["over"], params={"cutoff": "string"})
    reasons = message.split(": ", 1)[1].split("; ")
    expected = [
        f"run {RUN} did not complete (failed)",
        "--structural over: the step runs sandbox.frozen",
        "step over: output output/over.json did not verify (truncated)",
        "step over: its receipt shows an undeclared write to output/x.txt",
        "step summary has no verified completion",
        "--param cutoff: no step",
    ]
    for start in expected:
        assert sum(r.startswith(start) for r in reasons) == 1, (start, reasons)


# ---- the capsule a clean run becomes -----------------------------------------------------------


def test_a_completed_run_becomes_its_capsule_content():
    plan = compiled()
    content = extract(plan, PLAN_REF, record(), validators=VALIDATORS)
    assert content.goal_template == plan.mission
    assert content.plan_template == PLAN_REF and content.plan_hash == plan.plan_hash
    assert content.contracts == {s.step_key: s.contract_hash for s in plan.steps}
    schema = content.parameter_schema
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["sales"]  # an input is required; a scalar has its default
    assert schema["properties"]["limit"] == {"type": "number", "default": 3}
    sales = schema["properties"]["sales"]
    assert sales["type"] == "string"
    assert sales["x-forge-input"] == {
        "path": "input/sales.csv",
        "kind_key": "table.csv",
        "columns": {"region": "string", "amount": "number"},
    }
    [sales_input] = content.inputs
    assert (sales_input.validator, sales_input.row_shape, sales_input.observed_rows) == (
        "csv",
        "rows",
        2,
    )
    assert content.parameter_bindings == {"limit": 3}
    [limit] = content.scalars
    assert (limit.type, limit.default, limit.read_by) == ("number", 3, ["over"])
    over, summary = content.programs
    assert (over.source, over.cells, over.params_read) == ("frozen", [], ["limit"])
    assert (summary.source, [c.turn for c in summary.cells]) == ("session", [1, 2])
    profile = plan.profile_snapshot.profile
    assert content.governance["profile_id"] == plan.profile_snapshot.profile_id
    assert content.governance["egress"] == profile.egress.model_dump(mode="json")
    assert content.governance["budgets"] == profile.budgets.model_dump(mode="json")
    assert {"hitl", "skill_policy", "gates"} <= set(content.governance)
    assert content.isolation_policy == profile.sandbox.model_dump(mode="json")
    assert content.isolation_policy["isolation"] == "bwrap"
    provenance = content.provenance
    assert provenance.source_run_id == RUN and provenance.source_inputs == {"sales": SALES_SHA}
    assert set(provenance.receipts) == {"over", "summary"}


def test_a_structural_session_step_is_sealed_as_structural():
    content = extract(compiled(), PLAN_REF, record(), validators=VALIDATORS, structural=["summary"])
    assert [p.structural for p in content.programs] == [False, True]


def test_the_objective_is_the_goal_when_the_run_had_one():
    content = extract(compiled(), PLAN_REF, record(objective="Find big sellers"), validators={})
    assert content.goal_template == "Find big sellers"
    assert content.inputs[0].validator is None  # no validator known for its kind


def test_the_capsule_hash_is_stable_and_seals_every_code_cell():
    first = capsule_hash(extract(compiled(), PLAN_REF, record(), validators=VALIDATORS))
    again = capsule_hash(extract(compiled(), PLAN_REF, record(), validators=VALIDATORS))
    assert first == again and re.fullmatch(r"sha256:[0-9a-f]{64}", first)
    summary = record().steps["summary"]
    changed = [
        summary.cells[0],
        summary.cells[1].model_copy(update={"code": ref("other()\n", "code/2.py")}),
    ]
    other = extract(
        compiled(), PLAN_REF, with_step("summary", cells=changed), validators=VALIDATORS
    )
    assert capsule_hash(other) != first
    # Another source run (provenance) is another capsule too.
    moved = extract(compiled(), PLAN_REF, record(run_id="run-other"), validators=VALIDATORS)
    assert capsule_hash(moved) != first


def test_a_field_added_with_its_default_keeps_the_hash():
    """A later Forge may add content fields with defaults: stored capsules must still verify."""
    from schemas.capsule import CapsuleContent

    content = CapsuleContent.model_validate(
        {
            "goal_template": "g",
            "parameter_schema": {},
            "plan_template": {
                "artifact_id": "sha256:1",
                "path": "p",
                "sha256": "sha256:1",
                "size_bytes": 1,
            },
            "plan_hash": "sha256:2",
            "contracts": {},
            "programs": [
                {
                    "step_key": "a",
                    "contract_hash": "sha256:3",
                    "backend": "sandbox.frozen",
                    "source": "frozen",
                }
            ],
            "governance": {},
            "isolation_policy": {},
            "provenance": {
                "source_run_id": "r",
                "plan_hash": "sha256:2",
                "profile_snapshot_hash": "sha256:4",
                "library_snapshot_hash": "s",
            },
        }
    )
    explicit = content.model_copy(
        update={"programs": [content.programs[0].model_copy(update={"evaluates": False})]}
    )
    assert capsule_hash(explicit) == capsule_hash(content)
    changed = content.model_copy(
        update={"programs": [content.programs[0].model_copy(update={"evaluates": True})]}
    )
    assert capsule_hash(changed) != capsule_hash(content)
