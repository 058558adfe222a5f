"""Fixtures of the runner tests: every test runs under both launchers, in a fresh workspace."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True, params=["native", "python"])
def launcher_impl(request, monkeypatch) -> str:
    """Every test runs with the native launcher (built by make) and the Python fallback."""
    from activities.sandbox import native, runner

    if request.param == "python":
        monkeypatch.setattr(runner, "native_launcher", lambda: None)
    else:
        assert native.native_launcher() is not None, "build it: make (gcc launcher.c)"
    return request.param


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"
