"""A finished attempt's workspace is removed off the step's path, and drained before exit."""

from pathlib import Path

from activities.harness.cleanup import Remover


def attempt_dir(root: Path, step: str, name: str) -> Path:
    ws = root / "run-1" / step / name
    for sub in ("input", "work", "output", "meta"):
        (ws / sub).mkdir(parents=True)
    (ws / "output" / "x.json").write_text('{"ok": true}')
    return ws


def test_queued_workspaces_are_removed_with_their_empty_parents_only(tmp_path: Path):
    remover = Remover()
    done = attempt_dir(tmp_path, "a", "attempt-1")
    sibling = attempt_dir(tmp_path, "b", "attempt-1")  # another step, still running
    staging = done.parent / "attempt-1.skills"
    (staging / "skill").mkdir(parents=True)
    (staging / "skill" / "SKILL.md").write_text("sealed")
    (staging / "skill" / "SKILL.md").chmod(0o444)
    (staging / "skill").chmod(0o555)  # staged skills are sealed read-only
    remover.remove(done, staging)
    remover.drain()
    assert not done.exists() and not staging.exists()
    assert not (tmp_path / "run-1" / "a").exists()  # the step dir went with its last attempt
    assert sibling.is_dir() and (tmp_path / "run-1").is_dir()  # the run dir is not empty
    remover.remove(sibling, sibling.parent / "attempt-1.skills")
    remover.drain()
    assert not (tmp_path / "run-1").exists()


def test_drain_without_anything_queued_returns():
    Remover().drain()
