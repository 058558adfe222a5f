"""`forge run` with FORGE_TELEMETRY=otlp prints the run's trace id, the one its spans carry."""

from __future__ import annotations

import asyncio
import json
import re

from activities import telemetry as names
from tests.telemetry.conftest import uninstall
from tests.telemetry.otlp_receiver import Receiver
from tests.workflows.plans import code_step, plan, write_json
from workers.services.runs import SUBMIT_SPAN
from workers.telemetry import tracing


def _one_step(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(plan(code_step("a", write_json("output/a.json"), ["output/a.json"])))
    )
    return path


async def test_forge_run_prints_the_trace_its_spans_carry(cli, monkeypatch, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(plan(code_step("a", write_json("output/a.json"), ["output/a.json"])))
    )
    with Receiver() as receiver:
        monkeypatch.setenv("FORGE_TELEMETRY", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        try:
            ran = await asyncio.to_thread(cli, "run", path)
            assert ran.exit_code == 0, ran.output
            run_id = re.search(r"run (run-\S+)", ran.output).group(1)  # type: ignore[union-attr]
            shown = re.search(r"^trace ([0-9a-f]{32})$", ran.output, re.M)
            assert shown is not None, ran.output
            assert shown.group(1) == tracing.format_trace_id(tracing.run_trace_id(run_id))
        finally:
            uninstall()  # shuts the provider down: every span is exported first
    spans = [s for s in receiver.received() if s.trace_id == shown.group(1)]
    (root,) = [s for s in spans if s.name == SUBMIT_SPAN]
    assert root.service == "forge-cli" and root.attributes[names.RUN_ID] == run_id
    steps = [s for s in spans if s.attributes.get(names.STEP_ID) == "a"]
    # The step's attempt (the SDK's activity span) and its sandbox process inside it.
    attempts = [s for s in steps if s.name.startswith("RunActivity:")]
    assert [s.attributes[names.ATTEMPT] for s in attempts] == [1]
    (sandbox,) = [s for s in steps if s.name == "sandbox.run"]
    assert sandbox.parent_span_id in {s.span_id for s in spans}


async def test_forge_run_prints_no_trace_with_telemetry_off(cli, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(plan(code_step("a", write_json("output/a.json"), ["output/a.json"])))
    )
    ran = await asyncio.to_thread(cli, "run", path, "--detach")
    assert ran.exit_code == 0, ran.output
    assert not re.search(r"^trace ", ran.output, re.M)
    assert not tracing.installed()
