"""Fixtures shared by the stdlib skill package tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from activities.compile.typelib import load_library
from schemas.skills import SkillPackage
from tests.stdlib.skill_packages.support import SKILLS_DIR, STAGED


@pytest.fixture(scope="module", autouse=True)
def staged_skills(tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("staged-skills")
    for package in SKILLS_DIR.iterdir():
        if package.is_dir():
            STAGED[package.name] = shutil.copytree(package, root / package.name)


@pytest.fixture(scope="module")
def skills() -> dict[str, SkillPackage]:
    return load_library(()).skills


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "input").mkdir(parents=True)
    return tmp_path / "ws"
