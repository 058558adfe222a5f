"""docs/models.md's run with a scripted model, run live: the shown tokens, cost and model calls.

The page's `forge run "OBJECTIVE"` runs against examples/model-run/script.yaml served by the
local Messages server (as the page starts it), then `forge budget show` of that run; every
shown line must be printed, in order, after the usual normalisation (run ids, durations).
"""

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from activities.models.script import Script
from tests.docs.running import assert_prints_shown, printed_by
from tests.docs.shown import ROOT, Shown, shown_commands
from tests.support.messages_server import MessagesServer

PAGE = ROOT / "docs" / "models.md"
RUN_ID = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")


def _joined(shown: Shown) -> Shown:
    """A command continued with `\\` on the next lines, as one command and its output."""
    command, output = shown.command, list(shown.output)
    while command.endswith("\\"):
        command = command[:-1].rstrip() + " " + output.pop(0).strip()
    return replace(shown, command=command, output=output)


def test_the_scripted_model_run_prints_what_the_page_shows(
    cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = list(shown_commands(PAGE))
    server_cmd = next(s for s in shown if s.command.startswith("python -m tests.support"))
    block = [s for s in shown if s.block == server_cmd.block]
    run = _joined(next(s for s in block if s.command.startswith("forge run")))
    budget = next(s for s in block if s.command.startswith("forge budget show"))
    monkeypatch.chdir(ROOT)
    home = str(tmp_path / "home")
    script = Script.load(Path("examples/model-run/script.yaml"))
    with MessagesServer(script) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-local-demo")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        printed = printed_by(run, run.command)
    assert_prints_shown(run, printed, home)
    shown_id, new_id = RUN_ID.search("\n".join(run.output)), RUN_ID.search(printed)
    assert shown_id and new_id, printed
    command = budget.command.replace(shown_id.group(0), new_id.group(0))
    assert_prints_shown(budget, printed_by(budget, command), home)


def test_a_run_with_no_model_worker_prints_what_the_page_shows(
    cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's run without a key or a script: warned up front, failed after the short wait."""
    shown = [_joined(s) for s in shown_commands(PAGE) if s.command.startswith("forge run")]
    [unserved] = [s for s in shown if 'echo "exit $?"' in s.command]
    monkeypatch.chdir(ROOT)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "FORGE_MODEL_SCRIPT"):
        monkeypatch.delenv(name, raising=False)
    # The page's task queue (the default), so its lines wrap where the page shows them.
    monkeypatch.setenv("FORGE_TASK_QUEUE", "forge")
    assert_prints_shown(unserved, printed_by(unserved, unserved.command), str(tmp_path / "home"))
