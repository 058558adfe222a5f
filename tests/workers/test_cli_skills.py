"""`forge skills list|show|register|deprecate` as a person runs them, on the embedded SQLite."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from activities.store.artifacts import LocalArtifactStore
from activities.store.skills_registry import open_skill_registry
from workers.cli import app

Invoke = Callable[..., Result]
PACKAGE = Path(__file__).resolve().parents[1] / "data" / "skills" / "acme-report-builder"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")
    for variable in ("FORGE_DATABASE_URL", "FORGE_ARTIFACTS_URL", "FORGE_PACKS_PATH"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path / "home"


@pytest.fixture
def forge(home: Path) -> Invoke:
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["skills", *map(str, args)])


def test_register_then_list_shows_the_package(forge: Invoke, home: Path) -> None:
    before = forge("list")
    assert before.exit_code == 0, before.output
    assert "csv-profile" in before.output and "stdlib" in before.output
    assert "acme-report-builder" not in before.output
    assert "no registry database yet" in before.output
    assert not (home / "forge.db").exists()  # listing creates nothing

    registered = forge("register", PACKAGE, "--actor", "alice")
    assert registered.exit_code == 0, registered.output
    assert "registered acme-report-builder version 1 for tenant default: 4 file(s)" in (
        registered.output
    )
    listed = forge("list")
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if "acme-report-builder" in line)
    assert "registry (alice)" in row and "active" in row and "Acme" in row
    # the registry is per tenant
    assert "acme-report-builder" not in forge("list", "--tenant", "globex").output

    # what was stored is what the registry materializes
    url = f"sqlite:///{home / 'forge.db'}"
    with open_skill_registry(url, LocalArtifactStore(home / "artifacts")) as registry:
        sha = registry.get("default", "acme-report-builder").registration.sha256
        target = registry.materialize("default", "acme-report-builder", sha, home / "staging")
    assert (target / "scripts" / "build.py").read_bytes() == (
        PACKAGE / "scripts" / "build.py"
    ).read_bytes()


def test_re_register_is_unchanged_and_show_describes_the_skill(forge: Invoke) -> None:
    assert forge("register", PACKAGE, "--actor", "alice").exit_code == 0
    again = forge("register", PACKAGE, "--actor", "bob")
    assert again.exit_code == 0, again.output
    assert "unchanged" in again.output and "version 1" in again.output
    shown = forge("show", "acme-report-builder")
    assert shown.exit_code == 0, shown.output
    for text in ("registry", "version", "by alice", "output schema", "scripts/build.py", "sha256:"):
        assert text in shown.output, text
    stdlib = forge("show", "csv-profile")
    assert stdlib.exit_code == 0 and "stdlib" in stdlib.output


def test_deprecate_hides_the_skill_from_runs(forge: Invoke) -> None:
    assert forge("register", PACKAGE).exit_code == 0
    done = forge("deprecate", "acme-report-builder")
    assert done.exit_code == 0, done.output
    assert "deprecated acme-report-builder for tenant default" in done.output
    row = next(line for line in forge("list").output.splitlines() if "acme-report-builder" in line)
    assert "deprecated" in row
    missing = forge("deprecate", "no-such-skill")
    assert missing.exit_code == 2
    assert "has no registered skill 'no-such-skill'" in missing.output
    library = forge("deprecate", "csv-profile")
    assert library.exit_code == 2 and "forge-deprecated" in library.output


def test_unsafe_invalid_and_shadowing_packages_are_refused(forge: Invoke, tmp_path: Path) -> None:
    copy = tmp_path / "acme-report-builder"
    shutil.copytree(PACKAGE, copy)
    (copy / "assets" / "logo.png").symlink_to("/etc/hostname")
    unsafe = forge("register", copy)
    assert unsafe.exit_code == 2
    assert "assets/logo.png is a symlink" in unsafe.output
    clash = tmp_path / "csv-profile"
    clash.mkdir()
    shadow = forge("register", clash)
    assert shadow.exit_code == 2 and "cannot shadow" in shadow.output
    wrong = tmp_path / "renamed-report"
    shutil.copytree(PACKAGE, wrong)
    invalid = forge("register", wrong)
    assert invalid.exit_code == 2 and "equal its directory" in invalid.output
    unknown = forge("show", "no-such-skill")
    assert unknown.exit_code == 2 and "forge skills list" in unknown.output
