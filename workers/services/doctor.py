"""`forge doctor`: every check of a deployment, in order, as one DoctorReport.

The Temporal checks live in doctor_temporal.py, the stores' in doctor_stores.py; this module
holds the host's (the step runtime, a real bubblewrap sandbox) and the model providers', and
runs them all. Each check says what it found, and on failure what to do.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from activities.sandbox.step_runtime import RUNTIME_DIR
from schemas.doctor import DoctorCheck, DoctorReport
from workers.services.doctor_stores import artifacts_check, database_check
from workers.services.doctor_temporal import temporal_checks

if TYPE_CHECKING:
    from compiler.plan.context import ProfileLayers
    from schemas.profile import SandboxPolicy
    from workers.settings import Settings

__all__ = [
    "MODELS",
    "RUNTIME",
    "SANDBOX",
    "host_checks",
    "model_providers_check",
    "run_checks",
    "sandbox_check",
    "step_runtime_check",
]

RUNTIME = "step_runtime"
SANDBOX = "sandbox"
MODELS = "model_providers"
_PROBE_OUTPUT = "forge-doctor"
_PROBE_TIMEOUT_S = 60
_RUNTIME_FIX = "build it where FORGE_STEP_RUNTIME points (default /opt/forge/runtime)"


def _check(name: str, detail: str, fix: str | None = None) -> DoctorCheck:
    return DoctorCheck(name=name, ok=fix is None, detail=detail, fix=fix)


async def run_checks(settings: Settings) -> DoctorReport:
    """Every check, in the order `forge doctor` prints them."""
    checks = await temporal_checks(settings)
    checks += [database_check(settings), artifacts_check(settings)]
    checks += host_checks(settings)
    checks.append(model_providers_check(settings))
    return DoctorReport.of(checks)


def host_checks(settings: Settings) -> list[DoctorCheck]:
    """The step runtime (FORGE_STEP_RUNTIME) and a real sandbox on it: what a worker needs.

    `forge worker` refuses to start unless both pass (workers/services/sandbox_gate.py).
    """
    runtime = step_runtime_check(settings.step_runtime)
    return [runtime, sandbox_check(settings, runtime=runtime)]


def step_runtime_check(root: Path = RUNTIME_DIR) -> DoctorCheck:
    """The sealed step runtime is built, from this Forge's lock and bridge client."""
    from activities.sandbox.step_runtime import StepRuntimeError, step_runtime

    try:
        runtime = step_runtime(root)
    except StepRuntimeError as exc:
        return _check(RUNTIME, exc.what, exc.fix or _RUNTIME_FIX)
    return _check(RUNTIME, f"the sealed step runtime at {runtime.root} is built and current")


def sandbox_check(
    settings: Settings, *, runtime_root: Path | None = None, runtime: DoctorCheck | None = None
) -> DoctorCheck:
    """A real sandbox starts: the step runtime's python prints a line inside bubblewrap.

    Run as a step runs (run_sandboxed, the `default` profile's limits, a workspace under
    FORGE_WORKSPACE_ROOT), with bubblewrap whatever the profile says: a profile may allow
    `isolation: none`, but this checks that isolation is possible on this host. The runtime
    is FORGE_STEP_RUNTIME's unless `runtime_root` names another.
    """
    from activities.sandbox.runner import (
        SandboxLimits,
        SandboxUnavailable,
        WorkspaceViolation,
        run_sandboxed,
    )
    from activities.sandbox.workspace import prepare_workspace_root

    if runtime is not None and not runtime.ok:
        return _check(
            SANDBOX,
            "not checked: every sandbox runs the step runtime, which is not usable",
            "fix the step runtime check above first",
        )
    policy = _default_sandbox()
    try:
        workspace = Path(
            tempfile.mkdtemp(dir=prepare_workspace_root(settings.workspace_root), prefix="doctor-")
        )
    except (WorkspaceViolation, OSError) as exc:
        return _check(
            SANDBOX,
            f"cannot create a workspace under {settings.workspace_root}: {exc}",
            "set FORGE_WORKSPACE_ROOT to a directory this user owns (default "
            "/var/tmp/forge-<uid>/workspaces)",
        )
    try:
        result = run_sandboxed(
            ["python", "-c", f"print({_PROBE_OUTPUT!r})"],
            workspace=workspace,
            limits=SandboxLimits.for_step(policy, _PROBE_TIMEOUT_S),
            isolation="bwrap",
            runtime_root=runtime_root or settings.step_runtime,
        )
    except SandboxUnavailable as exc:
        return _check(SANDBOX, exc.message, exc.hint)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if result.exit_code != 0 or result.stdout.strip() != _PROBE_OUTPUT:
        said = " ".join(result.stderr.split())[-300:] or "no output"
        how = f"killed by {result.killed_by}" if result.killed_by else f"exit {result.exit_code}"
        return _check(
            SANDBOX,
            f"bubblewrap started, but the probe in it failed ({how}): {said}",
            "run `forge sandbox exec SCRIPT` to see the whole output; bubblewrap needs "
            "unprivileged user namespaces (docs/security.md#sandboxes-in-containers)",
        )
    return _check(SANDBOX, "bubblewrap created a sandbox and ran the step runtime's python in it")


def _default_sandbox() -> SandboxPolicy:
    from activities.compile.typelib import load_profiles

    layers, _ = load_profiles()
    return layers.builtin["default"].sandbox


def model_providers_check(settings: Settings) -> DoctorCheck:
    """Every provider a profile binds has a provider configured (✗ only for one that has none)."""
    from activities.compile.typelib import load_profiles
    from activities.models.config import providers_from_env
    from compiler.errors import PackError
    from schemas.errors import ForgeError

    try:
        layers, _ = load_profiles(settings.packs_path, home=settings.home)
    except PackError as exc:
        problems = "; ".join(f"{src} {field}: {msg}" for src, field, msg in exc.problems[:3])
        return _check(
            MODELS, f"the execution profiles do not load: {problems}", "fix the profile files"
        )
    key = settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
    try:
        providers, fallback = providers_from_env(
            key, settings.model_script, settings.anthropic_base_url
        )
    except ForgeError as exc:
        return _check(MODELS, f"FORGE_MODEL_SCRIPT: {exc.message}", exc.hint)
    bound = _bound_providers(layers)
    missing = {p: ids for p, ids in bound.items() if p not in providers and fallback is None}
    if missing:
        listed = "; ".join(
            f"{provider} (bound by {', '.join(sorted(ids))})"
            for provider, ids in sorted(missing.items())
        )
        return _check(
            MODELS,
            f"no model provider configured for {listed}",
            "set ANTHROPIC_API_KEY for anthropic (or FORGE_MODEL_SCRIPT, a scripted provider "
            "for tests and demos, which answers every binding)",
        )
    served = sorted(providers) + (["a model script (every other binding)"] if fallback else [])
    return _check(
        MODELS,
        f"profiles bind {', '.join(sorted(bound)) or 'no provider'}; configured: "
        f"{', '.join(served) or 'none'}",
    )


def _bound_providers(layers: ProfileLayers) -> dict[str, set[str]]:
    """Each provider a profile binds (planner phases, executors), with the profiles that do."""
    from schemas import names

    bound: dict[str, set[str]] = {}
    for profile_id, profile in (*layers.builtin.items(), *layers.workspace.items()):
        bindings = (*profile.executor_by_backend.values(), *profile.planner_phase_bindings.values())
        for binding in bindings:
            bound.setdefault(names.provider_of(binding.model_binding_ref), set()).add(profile_id)
    return bound
