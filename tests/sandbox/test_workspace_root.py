"""The workspace root: private to the worker's user; refused when another user could swap it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from activities.sandbox.workspace import WorkspaceViolation, prepare_workspace_root
from workers.settings import Settings, SettingsError, default_workspace_root

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared(tmp_path):
    """A directory like /var/tmp: world-writable and sticky."""
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o1777)
    return d


def test_a_new_root_is_created_private(shared):
    root = prepare_workspace_root(shared / "forge-x" / "workspaces")
    assert root.is_dir() and (root.stat().st_mode & 0o777) == 0o700
    assert prepare_workspace_root(root) == root  # an existing good root is accepted again


def test_a_symlinked_root_is_refused(shared, tmp_path):
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (shared / "ws").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(WorkspaceViolation, match="is a symlink, expected a directory"):
        prepare_workspace_root(shared / "ws")


def test_a_root_open_to_others_is_refused(shared):
    (shared / "ws").mkdir(mode=0o700)
    (shared / "ws").chmod(0o770)
    with pytest.raises(WorkspaceViolation, match="open to nobody else .* mode 770"):
        prepare_workspace_root(shared / "ws")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_parent_another_user_owns_is_refused(shared):
    parent = shared / "forge-0"
    parent.mkdir()
    parent.chmod(0o777)
    os.chown(parent, 65534, 65534)  # nobody pre-created it, open to all
    with pytest.raises(WorkspaceViolation, match="owned by uid 65534 .*another user could replace"):
        prepare_workspace_root(parent / "workspaces")


def test_a_group_writable_parent_without_sticky_bit_is_refused(shared):
    parent = shared / "open"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(WorkspaceViolation, match="mode 777: another user could replace"):
        prepare_workspace_root(parent / "workspaces")


def test_settings_default_is_neutral_and_bad_roots_are_refused(tmp_path):
    assert default_workspace_root() == Path(f"/var/tmp/forge-{os.getuid()}/workspaces")
    home = tmp_path / "home"
    env = {"FORGE_HOME": str(home)}
    assert Settings.from_env(env).workspace_root == default_workspace_root()
    for bad, expected in (
        ("relative/ws", "an absolute path"),
        (str(home / "ws"), "outside FORGE_HOME"),
        (str(ROOT / "ws"), "would be visible to step code"),
        (str(Path.home() / "ws"), "would be visible to step code"),
    ):
        with pytest.raises(SettingsError, match="FORGE_WORKSPACE_ROOT") as info:
            Settings.from_env(env | {"FORGE_WORKSPACE_ROOT": bad})
        assert expected in str(info.value)
    ok = Path(tempfile.mkdtemp(prefix="forge-ws-", dir="/var/tmp"))
    try:
        assert Settings.from_env(env | {"FORGE_WORKSPACE_ROOT": str(ok)}).workspace_root == ok
    finally:
        shutil.rmtree(ok)
