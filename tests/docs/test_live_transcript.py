"""The demo run's transcript in docs/cli.md, run live: `forge run` of the billing audit on the
session's Temporal dev server, then every command the page shows about that run (status,
watch, artifacts, receipts, budget, events), with the page's run id replaced by the new one.

Output lines must appear in order after the usual normalisation (run ids, durations, times), so
the shown plan hash, step table, outputs and event sequence stay true.
"""

import os
import re
import secrets
import shutil
import sys
from pathlib import Path

from tests.docs.running import assert_prints_shown, printed_by
from tests.docs.shown import ROOT, Shown, shown_commands

PAGE = ROOT / "docs" / "cli.md"
DEMO = "forge run examples/billing-audit/frozen-plan.json"
RUN_ID = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")
SHOWN_DATA = ".forge/demo/data"


def demo_transcript() -> tuple[Shown, list[Shown]]:
    """The demo run the page shows, and each later command about that run."""
    shown = list(shown_commands(PAGE))
    run = next(s for s in shown if s.command.startswith(DEMO))
    match = RUN_ID.search("\n".join(run.output))
    assert match, f"{run.source}: the demo run shows no run id"
    about = [s for s in shown if match.group(0) in s.command and s is not run]
    return run, about


def test_the_demo_run_and_what_the_page_shows_about_it(cli, tmp_path, monkeypatch):
    run, about = demo_transcript()
    assert {s.command.split()[1] for s in about} >= {"status", "artifacts", "receipts", "events"}
    monkeypatch.chdir(ROOT)
    home = str(tmp_path / "home")
    data = tmp_path / "data"
    sys.path.insert(0, str(ROOT / "examples" / "billing-audit"))
    try:
        import generate  # the generator `make demo` runs, with its seed
    finally:
        sys.path.pop(0)
    generate.generate(data, seed=2)
    printed = printed_by(run, run.command.replace(SHOWN_DATA, str(data)))
    assert_prints_shown(run, printed.replace(str(data), SHOWN_DATA), home)
    shown_id = RUN_ID.search("\n".join(run.output))
    new_id = RUN_ID.search(printed)
    assert shown_id and new_id, printed
    for shown in about:
        command = shown.command.replace(shown_id.group(0), new_id.group(0))
        target = re.search(r"-o (\S+)", command)
        if target is None:
            assert_prints_shown(shown, printed_by(shown, command), home)
            continue
        # `artifacts get … -o FILE`: a directory of this test's own, as long as the page's (so
        # the line wraps alike), named back to the page's in the output.
        shown_dir = str(Path(target.group(1)).parent)
        own = same_length_dir(len(shown_dir))
        try:
            printed = printed_by(shown, command.replace(shown_dir, own))
        finally:
            shutil.rmtree(own, ignore_errors=True)
        assert_prints_shown(shown, printed.replace(own, shown_dir), home)


def same_length_dir(length: int) -> str:
    """A new directory under /tmp whose path has `length` characters."""
    assert length > len("/tmp/") + 4, "the page's output directory is too short to mirror"
    while True:
        path = "/tmp/" + secrets.token_hex(length)[: length - len("/tmp/")]
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
