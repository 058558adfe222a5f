"""Shared compiler fixtures: the real stdlib library, the profile layers, a compile helper.

`compile_raw` is both a plain function (importable as `tests.compiler.conftest.compile_raw`,
handy inside hypothesis tests) and a session fixture of the same name.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest

from activities.compile.typelib import load_library, load_profiles
from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, ProfileLayers
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import CompiledPlan
from schemas.diagnostics import Diagnostic


@lru_cache(maxsize=1)
def _library() -> TypeLibrary:
    return load_library()


@lru_cache(maxsize=1)
def _profiles() -> ProfileLayers:
    layers, _ref = load_profiles()
    return layers


def make_ctx(
    profile_ref: str | None = None, profiles: ProfileLayers | None = None
) -> CompileContext:
    """A compile context over the real stdlib; `profiles` replaces the default layers."""
    return CompileContext(
        library=_library(), profiles=profiles or _profiles(), profile_ref=profile_ref
    )


def compile_raw(
    raw: dict[str, Any], profile_ref: str | None = None, *, ctx: CompileContext | None = None
) -> CompiledPlan:
    """Pass A intake plus passes B..E over a raw (JSON-decoded) plan."""
    return compile_plan(parse_candidate(raw), ctx=ctx or make_ctx(profile_ref))


def diagnostics_of(
    raw: dict[str, Any], profile_ref: str | None = None, *, ctx: CompileContext | None = None
) -> list[Diagnostic]:
    """Compile a plan that must be rejected; return every diagnostic it carries."""
    with pytest.raises(CompilerError) as info:
        compile_raw(raw, profile_ref, ctx=ctx)
    assert info.value.diagnostics, "a CompilerError must carry at least one diagnostic"
    return info.value.diagnostics


@pytest.fixture(scope="session")
def library() -> TypeLibrary:
    return _library()


@pytest.fixture(scope="session")
def profiles() -> ProfileLayers:
    return _profiles()


@pytest.fixture(scope="session")
def ctx() -> CompileContext:
    return make_ctx()


@pytest.fixture(scope="session", name="compile_raw")
def compile_raw_fixture() -> Any:
    return compile_raw
