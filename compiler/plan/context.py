"""What every pass may read: the type library and the execution-profile layers."""

from pydantic import Field

from compiler.errors import CompilerError
from compiler.hashing import sha256_of
from compiler.typesystem.library import TypeLibrary
from schemas.base import FrozenModel
from schemas.budget import PriceTable
from schemas.diagnostics import Diagnostic
from schemas.profile import ExecutionProfile, ExecutionProfileSnapshot, ProfileScope

BUILTIN_DEFAULT_PROFILE = "default"


class ProfileLayers(FrozenModel):
    """Execution profiles by scope; a later scope overrides an earlier one with the same id."""

    builtin: dict[str, ExecutionProfile]
    workspace: dict[str, ExecutionProfile] = Field(default_factory=dict)
    run: dict[str, ExecutionProfile] = Field(default_factory=dict)
    workspace_default: str | None = None
    prices: PriceTable = PriceTable()


class CompileContext(FrozenModel):
    library: TypeLibrary
    profiles: ProfileLayers
    profile_ref: str | None = None


def resolve_profile(ctx: CompileContext) -> ExecutionProfileSnapshot:
    """Resolve exactly one execution profile (built-in < workspace < run) and freeze it."""
    ref = ctx.profile_ref or ctx.profiles.workspace_default or BUILTIN_DEFAULT_PROFILE
    layers: tuple[tuple[ProfileScope, dict[str, ExecutionProfile]], ...] = (
        ("run", ctx.profiles.run),
        ("workspace", ctx.profiles.workspace),
        ("builtin", ctx.profiles.builtin),
    )
    for scope, profiles in layers:
        if ref in profiles:
            profile = profiles[ref]
            return ExecutionProfileSnapshot(
                profile_id=ref, scope=scope, profile=profile, snapshot_hash=sha256_of(profile)
            )
    known = sorted({*ctx.profiles.builtin, *ctx.profiles.workspace, *ctx.profiles.run})
    raise CompilerError(
        [
            Diagnostic(
                code="E_UNKNOWN_PROFILE",
                message=f"execution profile {ref!r} is not defined",
                hint=f"use one of: {', '.join(known)}, or pass a profile file with --profile",
                field="profile",
            )
        ]
    )
