"""Nothing secret leaves (issue 38 §3): every credential format of the guard's corpus is planted
where it can reach telemetry, runs go through real Temporal with FORGE_TELEMETRY=otlp, and the
bytes a real OTLP/HTTP receiver got, the /metrics text and the JSON log lines are searched.

Where each is planted: a failing step's error (the SDK's RunActivity span and its exception
event carry it), a bridge call's tool name and argument, a log line's message, extras and
traceback, a model's answer and the prompt that repeats it (FORGE_TELEMETRY_CONTENT=masked), and
a gate's approver role. Each test also finds the mask where the secrets were, so none can pass
by exporting nothing.
"""

from __future__ import annotations

import io
import json
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from activities import telemetry_metrics
from activities.models.script import Script
from activities.telemetry_content import GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES
from schemas.bounds import NAME_MAX
from tests.guard.corpus import CREDENTIALS, generator, secret
from tests.support.messages_server import MessagesServer
from tests.telemetry.conftest import uninstall
from tests.telemetry.otlp_receiver import ReceivedSpan, Receiver
from tests.telemetry.readings import Readings
from tests.workflows.engine import engine
from tests.workflows.model_env import API_KEY, executor, model_step, run_python, text
from tests.workflows.plans import code_step, plan
from tests.workflows.test_gates import pending_gate
from workers.process import logmask
from workers.settings import Settings
from workers.telemetry import tracing
from workers.telemetry.logs import JsonLineFormatter

MASK = "[REDACTED:"
SAMPLES = {name: generator(name)(random.Random(name)) for name in CREDENTIALS}
HIDDEN = {name: secret(name, sample) for name, sample in SAMPLES.items()}
BLOB = json.dumps(list(SAMPLES.values()))

BRIDGE = """
import json, forge_bridge
samples = json.loads(%r)
forge_bridge.call("log.note", {"text": " | ".join(samples)})
for sample in samples:
    try:
        forge_bridge.call(sample, {"url": sample})
    except forge_bridge.BridgeError:
        pass
open("output/a.json", "w").write(json.dumps({"calls": len(samples)}))
"""
RAISE = """
import json
samples = json.loads(%r)
raise RuntimeError("could not connect with " + " ; ".join(samples))
"""


def leaked(blob: bytes | str) -> list[str]:
    """The planted formats whose secret is in `blob` (the first characters of each)."""
    data = blob.encode() if isinstance(blob, str) else blob
    return [f"{name}: {HIDDEN[name][:12]}" for name in HIDDEN if HIDDEN[name].encode() in data]


@contextmanager
def exporting(home: Path, task_queue: str, **settings: Any) -> Iterator[tuple[Receiver, Settings]]:
    """Telemetry on for this process (its worker and its submissions), exported over OTLP/HTTP."""
    with Receiver() as receiver:
        configured = Settings(
            home=home,
            task_queue=task_queue,
            telemetry="otlp",
            otel_endpoint=receiver.url,
            **settings,
        )
        tracing.install(configured, "worker")
        try:
            yield receiver, configured
        finally:
            uninstall()  # shuts the provider down: every span still held is exported first


@contextmanager
def json_lines() -> Iterator[io.StringIO]:
    """The process's log records as a worker with --log-format json writes them."""
    logmask.install()  # as every Forge process does
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLineFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    activity_logger = logging.getLogger("temporalio.activity")
    activity_level = activity_logger.level
    activity_logger.setLevel(logging.DEBUG)  # its failed-attempt record carries the error
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        activity_logger.setLevel(activity_level)


def _spans(receiver: Receiver, run_id: str) -> list[ReceivedSpan]:
    return [s for s in receiver.received() if s.attributes.get("forge.run_id") == run_id]


async def test_a_failing_steps_error_a_bridge_call_and_a_log_line_leave_masked(
    temporal_env, task_queue, tmp_path, readings: Readings
):
    doc = plan(
        code_step("a", BRIDGE % BLOB, ["output/a.json"]),
        code_step("b", RAISE % BLOB, ["output/b.json"], depends_on=["a"]),
    )
    home = tmp_path / "home"
    with exporting(home, task_queue) as (receiver, settings), json_lines() as logs:
        async with engine(temporal_env, home, task_queue, settings=settings) as eng:
            result = await eng.run(doc)
        run_id = result.run_id
        # A log line as Forge code writes one: a message, extras and a traceback, all planted.
        for name, sample in SAMPLES.items():
            try:
                raise RuntimeError(f"lost {sample}")
            except RuntimeError:
                logging.getLogger("forge.test").exception(
                    "planted %s", sample, extra={"forge_tenant": sample, "forge_step": name}
                )
        # A metric label holding text (a model name as a plan wrote it).
        for sample in SAMPLES.values():
            telemetry_metrics.model_called("default", sample, 1, 1, None)
    assert result.status == "failed" and result.failed_steps == ["b"]
    assert receiver.bodies and set(receiver.paths) == {"/v1/traces"}
    assert [leaked(body) for body in receiver.bodies if leaked(body)] == []
    spans = _spans(receiver, run_id)
    # The SDK's span of the failed attempt: its status and exception event, masked.
    # The SDK's span of the failed attempt: its exception event (message, stack trace), masked.
    # (A step's failure is an expected one: the SDK sets no error status for it.)
    events = [a for s in spans if s.name.startswith("RunActivity:") for n, a in s.events]
    (raised,) = [a for a in events if "could not connect with" in str(a["exception.message"])]
    assert str(raised["exception.message"]).count(MASK) >= len(SAMPLES)
    assert "Traceback" in str(raised["exception.stacktrace"])
    # Each bridge call is its span, named by its tool masked; no argument is exported.
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert len([s for s in tools if MASK in s.name]) == len(SAMPLES)
    # The JSON log lines: none holds a secret; the planted ones show the mask.
    lines = logs.getvalue().splitlines()
    assert leaked("\n".join(lines)) == []
    planted = [json.loads(line) for line in lines if '"planted ' in line]
    assert len(planted) == len(SAMPLES)
    assert all(MASK in p["message"] and MASK in p["exception"] for p in planted)
    assert all(MASK in p["tenant"] for p in planted)
    # /metrics: no secret in any label; the masked model names are there.
    scraped = readings.process.scrape().decode()
    assert leaked(scraped) == [] and MASK.replace("[", "") in scraped
    assert readings.grew("forge.guard.findings") >= 1  # what was masked on its way was counted


CLEAN = "open('output/m.json', 'w').write('{\"n\": 0}')\n"


async def test_with_content_on_a_models_prompt_and_answer_leave_masked(
    temporal_env, task_queue, tmp_path
):
    # The model answers with every sample (a program holding them: refused, never run), and
    # its next prompt repeats that answer; then it writes a clean program.
    planted = "# " + " ; ".join(SAMPLES.values()) + "\n" + CLEAN
    answer = run_python(planted)
    answer["content"].insert(1, text("found: " + " | ".join(SAMPLES.values()))["content"][0])
    responses = [
        executor("m", answer),
        {
            "when": {"consumer": "executor", "last_contains": "program not run"},
            "response": run_python(CLEAN),
        },
        *[
            {"when": {"consumer": c}, "times": 0, "response": text(json.dumps({"steps": []}))}
            for c in ("resolver", "skill_resolver")
        ],
    ]
    home = tmp_path / "home"
    with MessagesServer(Script.from_data({"responses": responses})) as server:
        model = {"anthropic_api_key": SecretStr(API_KEY), "anthropic_base_url": server.base_url}
        with exporting(home, task_queue, telemetry_content="masked", **model) as (receiver, s):
            async with engine(temporal_env, home, task_queue, settings=s) as eng:
                result = await eng.run(plan(model_step("m", ["output/m.json"])))
    assert result.status == "completed"
    assert [leaked(body) for body in receiver.bodies if leaked(body)] == []
    chats = [s for s in _spans(receiver, result.run_id) if s.name.startswith("chat ")]
    outputs = [s.attributes.get(GEN_AI_OUTPUT_MESSAGES, "") for s in chats]
    inputs = [s.attributes.get(GEN_AI_INPUT_MESSAGES, "") for s in chats]
    assert any(o.count(MASK) >= len(SAMPLES) for o in outputs), outputs
    assert any("found: " in i and MASK in i for i in inputs)  # the answer, sent back masked


async def test_a_gates_approver_role_leaves_masked(temporal_env, task_queue, tmp_path):
    # A role is a name (at most NAME_MAX characters): every format whose sample fits one.
    roles = {name: s for name, s in SAMPLES.items() if len(s) <= NAME_MAX}
    assert len(roles) >= len(SAMPLES) - 5
    steps = []
    for i, role in enumerate(roles.values()):
        step = code_step(f"g{i}", "open('output/g.json', 'w').write('{}')\n", [f"output/g{i}.json"])
        step["approval"] = {"approver_role": role, "prompt": "Ship it?"}
        steps.append(step)
    home = tmp_path / "home"
    with exporting(home, task_queue) as (receiver, settings):
        async with engine(temporal_env, home, task_queue, settings=settings) as eng:
            handle = await eng.start(plan(*steps))
            for i in range(len(roles)):
                await pending_gate(handle, f"gate-g{i}")
            await handle.terminate("the gates' opening is what this test reads")
        tracing._provider.force_flush()  # type: ignore[union-attr]
        assert [leaked(body) for body in receiver.bodies if leaked(body)] == []
        opened = [
            attrs.get("forge.gate.approver_role", "")
            for s in _spans(receiver, handle.id)
            for name, attrs in s.events
            if name == "gate.opened"
        ]
    assert len(opened) == len(roles)
    assert all(MASK in role for role in opened), opened
