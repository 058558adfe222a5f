"""What README.md and docs/ show a command printing is what the command prints today."""

import shlex

import pytest
from typer.testing import CliRunner

from tests.docs.shown import ROOT, Shown, missing_lines, shown_commands
from workers.cli import app

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
SHOWN = [s for page in PAGES for s in shown_commands(page)]

# Commands whose shown output needs a live run, a server or the reader's own files: each is
# listed with why it is not run here, so a newly shown command is either checked or explained.
NOT_RUN = {
    "make demo": "the whole demo (the runs it makes are tested in tests/workflows and examples)",
    "forge dev": "starts and stops the embedded dev server the test session uses",
    "forge packs check my-packs/": "the reader's own pack directory",
    "forge status run-": "a run id from the reader's own run",
    "forge budget": "a run id from the reader's own run",
    "forge sandbox exec": "timings and limits of the reader's machine",
    "forge run": "a live run (ids and timings differ; tests/workers/test_cli_run.py runs it)",
    "python -m tests.support.messages_server": "starts a server",
    "export ": "sets the reader's shell environment",
}


def _not_run(shown: Shown) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if shown.command.startswith(prefix)), None)


CHECKED = [s for s in SHOWN if _not_run(s) is None]


def test_every_shown_command_is_run_or_says_why_not():
    assert SHOWN, "README.md shows no commands"
    for shown in CHECKED:
        assert shown.command.startswith("forge "), f"{shown.source}: {shown.command!r} is not run"


@pytest.mark.parametrize("shown", CHECKED, ids=[s.source for s in CHECKED])
def test_shown_output_is_what_the_command_prints(shown: Shown, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    # The width the output was shown at: a table squeezed to fit shows the same wrapping.
    monkeypatch.setenv("COLUMNS", str(max((len(x) for x in shown.output), default=80)))
    command = shown.command.split(";")[0]  # `forge …; echo "exit $?"`: the exit code is checked
    args = shlex.split(command, comments=True)[1:]
    result = CliRunner().invoke(app, args)
    printed = result.output
    if 'echo "exit $?"' in shown.command:
        printed += f"\nexit {result.exit_code}"
    missing = missing_lines(shown.output, printed)
    assert not missing, (
        f"{shown.source}: `{shown.command}` no longer prints these shown lines:\n"
        + "\n".join(missing)
        + "\n--- it prints:\n"
        + printed
    )
