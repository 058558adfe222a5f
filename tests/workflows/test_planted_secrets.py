"""Secrets never written down (issue 18 §2): every credential format of the guard's corpus is
planted in a model's reply (the program it writes, which is refused, never run), a bridge call
(`log.note`), a step's printed output and an exception message; then the event store, the
worker's logs, the Temporal histories and the artifact store's metadata are searched for each.

Real parts: the Temporal dev server, bubblewrap, the stores, the local Messages server.
"""

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from compiler.ladder.secrets.mask import _detectors
from schemas.guard import GUARD_OUTPUT_MASKED
from tests.guard.corpus import FORMATS
from tests.workflows.model_env import executor, model_engine, model_step, run_python
from tests.workflows.plans import code_step, plan, report_profile

PII = ("email", "phone", "card", "iban", "us-ssn")
SAMPLES = [
    FORMATS[name](__import__("random").Random(index))
    for index, name in enumerate(FORMATS)
    if not name.startswith(PII)
]


def secret_of(sample: str) -> str:
    """The credential itself in a sample line (what must never be written down)."""
    start, end, _kind = _detectors().text(sample)[0]
    return sample[start:end]


SECRETS = [secret_of(s) for s in SAMPLES]

WRITE = """
import json, forge_bridge
samples = json.loads(%r)
forge_bridge.call("log.note", {"text": " | ".join(samples)})
print("\\n".join(samples))
open("output/a.json", "w").write(json.dumps({"n": len(samples)}))
"""
CLEAN = """
open("output/m.json", "w").write('{"n": 0}')
"""
RAISE = """
import json
samples = json.loads(%r)
raise RuntimeError("could not connect with " + " ; ".join(samples))
"""


async def test_no_planted_credential_is_written_anywhere(
    temporal_env, task_queue, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)
    # `forge run` quiets this logger in its process; its failed-activity record (with the
    # exception's text) is one of the log lines this test needs.
    caplog.set_level(logging.DEBUG, logger="temporalio.activity")
    blob = json.dumps(SAMPLES)
    script = [
        executor("m", run_python(WRITE.replace("output/a.json", "output/m.json") % blob)),
        {
            "when": {"consumer": "executor", "last_contains": "program not run"},
            "response": run_python(CLEAN),
        },
    ]
    doc = plan(
        # the model's reply carries them (masked where it is recorded; the program holding them
        # is refused, not run, and the model writes one without them) ...
        model_step("m", ["output/m.json"]),
        # ... and a step's own code sends them through the bridge, prints them, raises them
        code_step("a", WRITE % blob, ["output/a.json"], depends_on=["m"]),
        code_step("b", RAISE % blob, ["output/b.json"], depends_on=["a"]),
    )
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        handle = await eng.start(doc)
        try:
            await handle.result()
        except Exception:  # noqa: BLE001 - step b fails on purpose
            pass
        run_id = handle.id
        outputs = await output_maskings(eng.services.events, run_id)
        log = eng.services.events.list_events(limit=1_000_000)
        histories = [(await handle.fetch_history()).to_json()]
        async for wf in eng.client.list_workflows(f'WorkflowId STARTS_WITH "{run_id}"'):
            if wf.id != run_id:
                h = eng.client.get_workflow_handle(wf.id, run_id=wf.run_id)
                histories.append((await h.fetch_history()).to_json())
        published = [json.dumps(e.payload) for e in log if e.type == "artifact.published.v1"]
    assert server.request_count >= 1  # the model was asked, and its reply carried the samples
    stored = "\n".join(e.model_dump_json() for e in log)
    logs = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    places = {"events": stored, "logs": logs, "history": "\n".join(histories)}
    places["artifact metadata"] = "\n".join(published)
    leaked = {where: [s[:12] for s in SECRETS if s in text] for where, text in places.items()}
    assert leaked == {where: [] for where in places}
    # The run did see them: the note, the step's failure and the program are there, masked.
    notes = [e for e in log if e.type == "log.noted.v1" and e.run_id == run_id]
    assert notes and "[REDACTED:" in json.dumps(notes[0].payload)
    findings = [e for e in log if e.type == "guard.masked.v1"]
    assert findings, "each masked event is followed by its guard.masked.v1"
    detectors = {f["detector"] for e in findings for f in e.payload["findings"]}
    assert len(detectors) >= 20, detectors
    masked_calls = [e for e in findings if e.payload["event_type"] == "model.called.v1"]
    assert masked_calls, "the model's reply was masked where it was recorded"
    [refused, ran] = [
        e.payload["detail"]
        for e in log
        if e.type == "tool.called.v1" and e.payload["channel"] == "executor" and e.run_id == run_id
    ]
    assert refused["exit_code"] is None and "program not run" in refused["problems"][0]
    assert ran["exit_code"] == 0  # ... and the program without them ran
    assert "could not connect with" in places["history"]  # the failure is recorded, masked
    # ... and what was masked in the failure and in the worker's log lines is an event of its
    # own, in the run's tenant, naming the activity and its workflow (never the value).
    # The failure's text is masked where its stderr is cut (masked_output.clipped), so the
    # log line that repeats it has nothing left to mask.
    sinks = {(e.payload["sink"], e.run_id) for e in outputs}
    assert ("failure", run_id) in sinks, sinks
    [failed] = [e for e in outputs if e.payload["sink"] == "failure"]
    assert failed.payload["source"].startswith("activity ")
    assert failed.payload["workflow_id"] == run_id
    assert len({f["detector"] for f in failed.payload["findings"]}) >= 20
    assert all(e.stream_id == "guard:default" for e in outputs)


async def output_maskings(events, run_id: str) -> list:
    """The run's guard.output_masked.v1 events, once the worker has recorded them (each second)."""
    for _ in range(600):  # a minute, for a loaded machine
        found = [e for e in events.list_events(run_id=run_id) if e.type == GUARD_OUTPUT_MASKED]
        if "failure" in {e.payload["sink"] for e in found}:
            return found
        await asyncio.sleep(0.1)
    return found


# Split so that the plan holds neither half: step w's program joins them.
AWS_ID = ("AKIA", "QYLPMN5HHHFPZAM2")
AWS_SECRET = ("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzq3vKEY9ab")
HEADERLESS = f"""
key_id, secret = {AWS_ID[0]!r} + {AWS_ID[1]!r}, {AWS_SECRET[0]!r} + {AWS_SECRET[1]!r}
open("output/creds.csv", "w").write(f"aws-prod,{{key_id}},{{secret}}\\nci,x,y\\n")
"""


async def test_a_headerless_csv_reaches_the_model_with_its_first_line_masked(
    temporal_env: Any, task_queue: str, tmp_path: Path
) -> None:
    """A step's preflight receipt (its evidence in the executor's prompt) is masked first."""
    key_id, secret = "".join(AWS_ID), "".join(AWS_SECRET)
    script = [executor("m", run_python("open('output/m.json', 'w').write('{\"n\": 1}')"))]
    doc = plan(
        code_step("w", HEADERLESS, ["output/creds.csv"]),
        model_step("m", ["output/m.json"], depends_on=["w"], input_file_paths=["output/creds.csv"]),
    )
    async with model_engine(temporal_env, tmp_path / "h", task_queue, script) as (eng, server):
        # Report mode: under the default profile step w's output is refused (step_output).
        result = await eng.run(doc, profile_document=report_profile())
        log = eng.services.events.list_events(limit=100_000)
        prompts = json.dumps(server.requests)
    assert result.status == "completed"
    assert "[REDACTED:aws_key]" in prompts  # the evidence names the column
    assert key_id not in prompts and secret not in prompts
    [pre] = [
        e
        for e in log
        if e.type == "guard.masked.v1"
        and e.payload["event_type"] == "step.receipt.preflight.v1"
        and e.payload["event_id"].endswith(":m:1")
    ]
    assert {f["detector"] for f in pre.payload["findings"]} == {
        "aws_key",
        "aws_secret",
    }
