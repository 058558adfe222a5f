"""The event catalogue: every type written is catalogued, typed, exported and still readable."""

import ast
import base64
import json
import re
from pathlib import Path

import pytest

from schemas.error_codes import ErrorCode
from schemas.event_catalogue import CATALOGUE, payload_of, read_payload
from schemas.events import ROOT_EVENT_TYPES, EventDraft
from schemas.run_events import RunCompleted, RunStarted
from schemas.step_events import StepCompleted
from tests.schemas.event_samples import REF, SAMPLES
from tests.support.errors import raises_code
from tests.support.events import catalogue_problems
from workers.cli.schema_list import EXPORTED

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("activities", "compiler", "schemas", "workers", "workflows")
EVENT_TYPE = re.compile(r"^[a-z_]+(\.[a-z_]+)+\.v\d+$")
# `{run_id}:run.completed.v1`, `{run_id}:step:{key}`, `{run_id}:budget`: an id put together.
ID_FRAGMENT = re.compile(
    r"^:([a-z_]+(\.[a-z_]+)+\.v\d+(:.*)?|(run|step|gate|budget|recipes|plan|compile)(:.*)?)$"
)
HISTORIES = sorted((ROOT / "tests" / "replay" / "histories").glob("*.json"))


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8")))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


MODULES = _modules()


def test_every_event_type_literal_in_the_code_is_catalogued():
    found: dict[str, set[str]] = {}
    for name, tree in MODULES:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if EVENT_TYPE.match(node.value):
                    found.setdefault(node.value, set()).add(name)
    missing = {t: sorted(where) for t, where in found.items() if t not in CATALOGUE}
    assert not missing, f"event types written but not in schemas/event_catalogue.py: {missing}"
    # The scan sees the literals: at least the catalogue's own constants.
    assert set(CATALOGUE) <= set(found)


def test_event_type_literals_live_in_schemas_only():
    """Writers and readers name types by the catalogue's constants, never by a new literal."""
    outside = sorted(
        f"{name}: {node.value}"
        for name, tree in MODULES
        if not name.startswith("schemas/")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and EVENT_TYPE.match(node.value)
    )
    assert not outside, outside


def _calls_to(tree: ast.Module, callee: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == callee)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == callee)
        )
    ]


def test_every_event_draft_payload_is_built_by_its_model():
    """No writer passes a raw dict: EventDraft(payload=payload_of(TYPE, Model(...)))."""
    drafts, raw = 0, []
    for name, tree in MODULES:
        for call in _calls_to(tree, "EventDraft"):
            drafts += 1
            payload = next((k.value for k in call.keywords if k.arg == "payload"), None)
            if not (
                isinstance(payload, ast.Call)
                and isinstance(payload.func, ast.Name)
                and payload.func.id == "payload_of"
            ):
                raw.append(f"{name}:{call.lineno}")
    assert drafts >= 8, "the scan found too few EventDraft constructions"
    assert not raw, f"EventDraft built without payload_of(type, model): {raw}"


def test_no_module_but_event_ids_formats_an_event_or_stream_id():
    """Ids are made by schemas.event_ids only: no f-string puts a type or `:step:` into one."""
    offenders = []
    for name, tree in MODULES:
        if name == "schemas/event_ids.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                parts = [
                    v.value
                    for v in node.values
                    if isinstance(v, ast.Constant) and isinstance(v.value, str)
                ]
                if any(ID_FRAGMENT.match(part) for part in parts):
                    offenders.append(f"{name}:{node.lineno}")
    assert not offenders, offenders


def test_the_catalogue_is_well_formed():
    for name, entry in CATALOGUE.items():
        assert entry.name == name and EVENT_TYPE.match(name)
        assert entry.family + f".v{entry.version}" == name
        assert entry.description.strip()
    assert ROOT_EVENT_TYPES <= set(CATALOGUE)
    assert CATALOGUE["step.completed.v1"].version == 1
    assert CATALOGUE["step.completed.v1"].family == "step.completed"


def test_every_payload_model_has_an_exported_json_schema():
    assert {t.payload for t in CATALOGUE.values()} <= set(EXPORTED)
    for entry in CATALOGUE.values():
        path = ROOT / "schemas" / "jsonschema" / f"{entry.payload.__name__}.json"
        assert path.is_file(), path


def test_every_catalogued_type_has_a_sample():
    assert set(SAMPLES) == set(CATALOGUE)


@pytest.mark.parametrize("event_type", sorted(SAMPLES))
def test_each_payload_round_trips(event_type):
    model = CATALOGUE[event_type].payload.model_validate(SAMPLES[event_type])
    stored = payload_of(event_type, model)
    assert stored == SAMPLES[event_type]  # the fields the writer set, no more, no less
    assert read_payload(event_type, stored) == model
    assert model.model_json_schema()["title"] == CATALOGUE[event_type].payload.__name__
    EventDraft.model_validate(
        {"event_id": f"r1:{event_type}", "type": event_type, "payload": stored, "timestamp": 0}
    )


def test_defaults_a_writer_left_out_are_not_stored():
    started = RunStarted(plan_ref=None, inputs=[], profile=None)
    assert payload_of("run.started.v1", started) == {
        "plan_ref": None,
        "inputs": [],
        "profile": None,
    }
    assert read_payload("run.started.v1", {"inputs": []}) == RunStarted()


def test_payload_of_refuses_an_unknown_type_and_the_wrong_model():
    with raises_code(ErrorCode.EVENT_UNCATALOGUED):
        payload_of("step.exploded.v1", RunStarted())
    with raises_code(ErrorCode.EVENT_UNCATALOGUED, match="RunCompleted"):
        payload_of("run.completed.v1", RunStarted())


def test_reading_tolerates_old_keys_and_unknown_types():
    old = {**SAMPLES["step.completed.v1"], "legacy_field": 1}
    parsed = read_payload("step.completed.v1", old)
    assert isinstance(parsed, StepCompleted) and parsed.iteration == 1
    assert read_payload("something.new.v9", {"x": 1}) is None


# Payloads as earlier versions of the writers stored them (before this catalogue).
LEGACY = [
    ("run.completed.v1", {"steps": 0, "reason": "a greeting needs no plan"}),
    ("run.failed.v1", {"stage": "compile", "error": "E_CYCLE", "details": [{"code": "E"}]}),
    ("run.failed.v1", {"stage": "plan", "error": "no planner", "hints": ["forge/x"]}),
    ("run.failed.v1", {"plan_hash": "h", "problems": ["x was not published"], "outputs": []}),
    # before the model layer recorded provider, provider_model, context and stage hashes
    ("model.called.v1", {"model": "m", "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0}),
    ("step.started.v1", {"step_key": "a", "attempt": 1, "contract_hash": "h", "step_id": "a"}),
    ("step.completed.v1", {**SAMPLES["step.completed.v1"], "code_ref": REF, "iteration": 3}),
    ("recipe.trail.v1", {"verb": "warn", "summary": "recipe match failed"}),
]


@pytest.mark.parametrize(("event_type", "payload"), LEGACY)
def test_legacy_payloads_still_read(event_type, payload):
    parsed = read_payload(event_type, payload)
    assert parsed is not None
    assert payload_of(event_type, parsed) == payload


def _recorded_drafts() -> list[EventDraft]:
    """Every event the recorded workflow histories appended (events__append inputs)."""
    drafts = []
    for path in HISTORIES:
        for event in json.loads(path.read_text())["events"]:
            scheduled = event.get("activityTaskScheduledEventAttributes")
            if not scheduled or scheduled["activityType"]["name"] != "events__append":
                continue
            data = json.loads(base64.b64decode(scheduled["input"]["payloads"][0]["data"]))
            for batch in [*data.get("earlier", []), data]:
                drafts += [EventDraft.model_validate(e) for e in batch["events"]]
    return drafts


def test_events_in_recorded_histories_validate_against_the_catalogue():
    drafts = _recorded_drafts()
    assert len({d.type for d in drafts}) >= 10, "the histories hold fewer event types than expected"
    assert not catalogue_problems(drafts)
    for draft in drafts:  # and the stored form is what today's models would store
        parsed = read_payload(draft.type, draft.payload)
        assert parsed is not None and payload_of(draft.type, parsed) == draft.payload, draft


def test_finalize_payload_is_stored_as_before():
    done = RunCompleted.model_validate(SAMPLES["run.completed.v1"])
    assert payload_of("run.completed.v1", done)["cost"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "usd": 0.0,
    }


def test_the_catalogue_document_lists_every_type():
    text = (ROOT / "docs" / "events-catalogue.md").read_text(encoding="utf-8")
    for name, entry in CATALOGUE.items():
        assert f"| `{name}` | {entry.version} | [`{entry.payload.__name__}`]" in text, name
