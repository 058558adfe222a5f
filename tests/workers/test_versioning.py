"""Worker versioning settings: which deployment version a worker registers as, and why."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
import temporalio.workflow
from temporalio.common import VersioningBehavior

from workers.plugin import WORKFLOWS
from workers.process.versioning import (
    CODE_PACKAGES,
    DATA_DIRS,
    build_id_of,
    code_hash,
    default_build_id,
    deployment_config,
    installed_distributions,
)
from workers.settings import Settings, SettingsError


def test_unversioned_without_a_deployment_name(tmp_path):
    assert deployment_config(Settings(home=tmp_path)) is None


def test_a_deployment_name_versions_the_workers_as_the_build(tmp_path):
    config = deployment_config(Settings(home=tmp_path, deployment_name="forge", build_id="b7"))
    assert config is not None and config.use_worker_versioning
    assert config.version.to_canonical_string() == "forge.b7"
    assert config.default_versioning_behavior == VersioningBehavior.PINNED


def test_the_build_id_defaults_to_the_version_and_a_hash_of_the_code(tmp_path):
    settings = Settings(home=tmp_path, deployment_name="forge")
    assert build_id_of(settings) == default_build_id()
    version = re.escape(importlib.metadata.version("forge"))
    assert re.fullmatch(rf"{version}-[0-9a-f]{{12}}", default_build_id())
    assert default_build_id().endswith(code_hash(Path(__file__).resolve().parents[2]))


def test_the_code_hash_changes_with_any_module_of_the_code(tmp_path):
    for package in CODE_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    before = code_hash(tmp_path)
    assert code_hash(tmp_path) == before
    (tmp_path / "workflows" / "a.py").write_text("x = 2\n")
    changed = code_hash(tmp_path)
    assert changed != before
    (tmp_path / "schemas" / "b.py").write_text("")
    assert code_hash(tmp_path) not in (before, changed)


def test_the_code_hash_changes_with_any_stdlib_file(tmp_path):
    for package in CODE_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    profiles = tmp_path / "stdlib" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "p.yaml").write_text("name: p\n")
    before = code_hash(tmp_path)
    (profiles / "p.yaml").write_text("name: q\n")
    changed = code_hash(tmp_path)
    assert changed != before
    (tmp_path / "stdlib" / "types.yaml").write_text("")
    added = code_hash(tmp_path)
    assert added not in (before, changed)
    # Bytecode caches differ between hosts of one release and are not part of it.
    (tmp_path / "stdlib" / "__pycache__").mkdir()
    (tmp_path / "stdlib" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert code_hash(tmp_path) == added
    assert "stdlib" in DATA_DIRS


def test_the_code_hash_changes_with_any_installed_distribution(tmp_path):
    (tmp_path / "workers").mkdir()
    (tmp_path / "workers" / "a.py").write_text("x = 1\n")
    installed = installed_distributions()
    assert f"temporalio=={importlib.metadata.version('temporalio')}" in installed
    assert code_hash(tmp_path) == code_hash(tmp_path, installed)
    upgraded = [d if not d.startswith("temporalio==") else "temporalio==999.0.0" for d in installed]
    assert code_hash(tmp_path, upgraded) != code_hash(tmp_path, installed)
    assert code_hash(tmp_path, [*installed, "extra==1.0"]) != code_hash(tmp_path, installed)


def test_no_workflow_overrides_the_workers_pinned_default():
    """A workflow's own behaviour would apply on unversioned workers too, which refuse it."""
    declared = {
        w.__name__: temporalio.workflow._Definition.must_from_class(w).versioning_behavior
        for w in WORKFLOWS
    }
    assert set(declared.values()) <= {None, VersioningBehavior.UNSPECIFIED}, declared


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FORGE_DEPLOYMENT_NAME", "forge.prod", "no '.'"),
        ("FORGE_DEPLOYMENT_NAME", "-forge", "a worker deployment name"),
        ("FORGE_BUILD_ID", "1.2 beta", "a build id"),
        ("FORGE_BUILD_ID", "x" * 101, "up to 100"),
    ],
)
def test_an_unusable_name_or_build_id_names_the_variable(tmp_path, variable, value, expected):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_HOME": str(tmp_path), variable: value})
    assert str(caught.value).startswith(f"{variable}=")
    assert expected in str(caught.value)


def test_the_variables_are_read(tmp_path):
    settings = Settings.from_env(
        {"FORGE_HOME": str(tmp_path), "FORGE_DEPLOYMENT_NAME": "forge", "FORGE_BUILD_ID": "2.0.1"}
    )
    assert (settings.deployment_name, settings.build_id) == ("forge", "2.0.1")
