"""Worker versioning settings: which deployment version a worker registers as, and why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import temporalio.workflow
from temporalio.common import VersioningBehavior

from workers.plugin import WORKFLOWS
from workers.process.versioning import (
    CODE_PACKAGES,
    build_id_of,
    code_hash,
    default_build_id,
    deployment_config,
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
    assert re.fullmatch(r"0\.1\.0-[0-9a-f]{12}", default_build_id())
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
