"""A sandboxed process and each bridge tool call are spans; no secret reaches one."""

import shutil
import subprocess
from pathlib import Path

import pytest

from activities.sandbox import runner
from activities.sandbox.runner import run_sandboxed
from activities.sandbox.workspace import ensure_layout
from activities.telemetry import FAILURE_CLASS, RUN_ID, STEP_ID, TENANT, tracer
from tests.sandbox.bridge.support import LIMITS, RUN, STEP, Counting, run_step, step_result
from tests.spans.conftest import _enable, _provider, by_name
from tests.support.sandbox import needs_bwrap

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
BURN = "x = 0\nfor i in range(3_000_000):\n    x += i\n"
# About 64 MiB held at once: the step's peak, far above the launcher's own size.
HOLD = "held = bytearray(64 << 20)\nheld[::4096] = b'x' * len(held[::4096])\n"


def _exported(spans) -> str:
    """Everything an exporter would send of the finished spans, as text."""
    return "".join(s.to_json() for s in spans.get_finished_spans())


LAUNCHER_C = Path(runner.__file__).with_name("launcher.c")


@pytest.fixture(params=["native", "python"])
def launcher(request, tmp_path, monkeypatch) -> str:
    """The native launcher built from this tree's launcher.c, or the Python fallback."""
    if request.param == "native":
        cc = shutil.which("cc") or shutil.which("gcc")
        assert cc is not None, "a C compiler builds the native launcher (make system-deps)"
        binary = tmp_path / "forge-sandbox-launcher"
        subprocess.run([cc, "-O2", "-o", str(binary), str(LAUNCHER_C)], check=True)
        monkeypatch.setattr(runner, "native_launcher", lambda: binary)
    else:
        monkeypatch.setattr(runner, "native_launcher", lambda: None)
    return request.param


@needs_bwrap
def test_a_sandboxed_process_is_a_span_with_its_exit_code_cpu_and_memory(tmp_path, spans, launcher):
    ws = tmp_path / "ws"
    ensure_layout(ws)
    (ws / "meta" / "step.py").write_text(BURN + HOLD + "raise SystemExit(3)\n")
    ids = {TENANT: "acme", RUN_ID: "run-1", STEP_ID: "totals"}
    result = run_sandboxed(
        ["python", "/workspace/meta/step.py"], workspace=ws, limits=LIMITS, span_ids=ids
    )
    assert result.exit_code == 3
    [span] = by_name(spans, "sandbox.run")
    attrs = dict(span.attributes or {})
    assert attrs["forge.sandbox.exit_code"] == 3
    assert attrs["forge.sandbox.cpu_s"] > 0
    assert 64 << 20 < attrs["forge.sandbox.peak_rss_bytes"] < 512 << 20  # the step's, not ours
    assert attrs["forge.sandbox.timed_out"] is False
    assert attrs["forge.sandbox.isolation"] == "bwrap"
    assert "forge.sandbox.killed_by" not in attrs
    assert {k: attrs[k] for k in ids} == ids
    assert not span.status.is_ok


@needs_bwrap
def test_a_sandbox_killed_at_its_wall_clock_says_so(tmp_path, spans):
    ws = tmp_path / "ws"
    ensure_layout(ws)
    (ws / "meta" / "step.py").write_text("import time\ntime.sleep(60)\n")
    limits = LIMITS.model_copy(update={"wall_clock_s": 0.5})
    result = run_sandboxed(["python", "/workspace/meta/step.py"], workspace=ws, limits=limits)
    assert result.killed_by == "wall_clock"
    [span] = by_name(spans, "sandbox.run")
    attrs = dict(span.attributes or {})
    assert attrs["forge.sandbox.timed_out"] is True
    assert attrs["forge.sandbox.killed_by"] == "wall_clock"
    assert "forge.sandbox.exit_code" not in attrs


@needs_bwrap
def test_each_bridge_call_is_an_execute_tool_span_without_arguments_or_results(
    tmp_path, store, artifacts, spans
):
    secret_arg = "the-argument-" + "q" * 12

    def echo(args, _call):
        return {"echo": args, "body": "result-text-" + "r" * 12}

    _result, out = run_step(
        tmp_path,
        store,
        artifacts,
        f"emit(call('http.request', {{'url': {secret_arg!r}}}))\n"
        f"emit(call({STRIPE!r}, {{}}))\n"
        "emit(call('log.note', {'text': 'hello'}))\n",
        handlers={"http.request": Counting(echo)},
    )
    assert [s for s, *_ in step_result(out)] == ["ok", "err", "ok"], out
    tools = by_name(spans, "execute_tool ")
    assert [s.name for s in tools] == [
        "execute_tool http.request",
        "execute_tool [REDACTED:stripe-access-token]",
        "execute_tool log.note",
    ]
    ok, refused, noted = (dict(s.attributes or {}) for s in tools)
    assert ok["gen_ai.operation.name"] == "execute_tool"
    assert ok["gen_ai.tool.name"] == "http.request" and ok["forge.tool.outcome"] == "ok"
    assert ok[RUN_ID] == RUN and ok[STEP_ID] == STEP and ok[TENANT] == "default"
    assert ok["forge.attempt"] == 1
    assert refused["forge.tool.outcome"] == "refused"
    assert refused["error.type"] == refused[FAILURE_CLASS] == "UNKNOWN_TOOL"
    assert noted["gen_ai.tool.name"] == "log.note" and noted["forge.tool.outcome"] == "ok"
    # Nothing of the arguments, the results or the planted credential is exported.
    exported = _exported(spans)
    assert STRIPE not in exported and secret_arg not in exported
    assert "result-text-" not in exported and "hello" not in exported
    # The sandboxed process that made the calls is a span too.
    [sandbox] = by_name(spans, "sandbox.run")
    assert dict(sandbox.attributes or {})["forge.sandbox.exit_code"] == 0


def test_outside_a_span_test_telemetry_is_off_again(spans):
    assert tracer().start_span("inside").is_recording()
    _enable(_provider(), False)
    try:
        assert not tracer().start_span("after").is_recording()
    finally:
        _enable(_provider(), True)
