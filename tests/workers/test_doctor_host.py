"""`forge doctor`'s host checks: the step runtime, a real bubblewrap sandbox, model providers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from activities.compile.typelib import STDLIB_DIR
from activities.sandbox.step_runtime import RUNTIME_DIR
from workers.services.doctor import (
    model_providers_check,
    sandbox_check,
    step_runtime_check,
)
from workers.settings import Settings

_SCRIPT = "responses:\n  - response:\n      content:\n        - {type: text, text: hello}\n"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def test_the_built_runtime_is_current_and_a_sandbox_runs_in_it(settings: Settings) -> None:
    runtime = step_runtime_check()
    assert runtime.ok, runtime
    assert str(RUNTIME_DIR) in runtime.detail
    sandbox = sandbox_check(settings, runtime=runtime)
    assert sandbox.ok, sandbox
    assert sandbox.fix is None


def test_a_missing_runtime_fails_both_checks_naming_the_build(
    settings: Settings, tmp_path: Path
) -> None:
    missing = tmp_path / "no-runtime"
    runtime = step_runtime_check(missing)
    assert not runtime.ok
    assert "not built" in runtime.detail and str(missing) in runtime.detail
    assert runtime.fix is not None and "make runtime" in runtime.fix
    # Asked on its own, the sandbox names the runtime it could not find.
    alone = sandbox_check(settings, runtime_root=missing)
    assert not alone.ok and "not built" in alone.detail
    after = sandbox_check(settings, runtime_root=missing, runtime=runtime)
    assert not after.ok and after.detail.startswith("not checked")


def test_a_stale_runtime_is_refused(settings: Settings, tmp_path: Path) -> None:
    stale = tmp_path / "runtime"
    (stale / "bin").mkdir(parents=True)
    os.symlink(RUNTIME_DIR / "bin" / "python", stale / "bin" / "python")
    (stale / "forge-runtime.json").write_text('{"digest": "0000"}', encoding="utf-8")
    runtime = step_runtime_check(stale)
    assert not runtime.ok
    assert "another lock" in runtime.detail


def test_bwrap_missing_from_path_fails_the_sandbox_check(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("bwrap") is not None  # the host has it: only PATH hides it below
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    check = sandbox_check(settings)
    assert not check.ok
    assert "bubblewrap (bwrap) is not installed" in check.detail
    assert check.fix is not None and "bubblewrap" in check.fix


def test_no_provider_for_the_builtin_profiles_fails_naming_them(settings: Settings) -> None:
    check = model_providers_check(settings)
    assert not check.ok
    assert "anthropic (bound by default, fast-prototyping, strict-compliance)" in check.detail
    assert check.fix is not None and "ANTHROPIC_API_KEY" in check.fix


def test_a_key_serves_the_builtin_profiles(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", anthropic_api_key="sk-ant-doctor-test-0000")
    check = model_providers_check(settings)
    assert check.ok, check
    assert "configured: anthropic" in check.detail
    assert "sk-ant" not in check.detail


def test_a_model_script_serves_every_binding(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(_SCRIPT, encoding="utf-8")
    check = model_providers_check(Settings(home=tmp_path / "home", model_script=script))
    assert check.ok, check
    assert "a model script" in check.detail


def test_a_workspace_profile_binding_an_unconfigured_provider_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "profiles").mkdir(parents=True)
    text = (STDLIB_DIR / "profiles" / "default.yaml").read_text(encoding="utf-8")
    assert "profile_id: default" in text and "anthropic:claude-opus-4-6" in text
    text = text.replace("profile_id: default", "profile_id: local-llm")
    text = text.replace("anthropic:claude-opus-4-6", "ollama:llama-4")
    (home / "profiles" / "local-llm.yaml").write_text(text, encoding="utf-8")
    check = model_providers_check(Settings(home=home, anthropic_api_key="sk-ant-doctor-test"))
    assert not check.ok
    # Only the provider no key serves, and only the profile that binds it.
    assert check.detail == "no model provider configured for ollama (bound by local-llm)"
