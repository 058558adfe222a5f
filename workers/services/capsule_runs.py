"""Starting a capsule run: the run's tenant's settings say where its inputs may be read."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from activities.capsules import prepare_run as capsule_runs
from activities.capsules.prepare_run import (
    CapsuleRun,
    InputLocationRefused,
    InputPolicy,
    capsule_ref,
    check_input,
)
from activities.store.artifacts import ArtifactStore
from activities.store.capsules import CapsuleStore
from schemas.scope import DEFAULT_TENANT, Scope
from schemas.tenant_settings import InputBucket, TenantSettings
from workers.services.runs import new_run_id
from workers.settings import Settings

__all__ = [
    "CapsuleRun",
    "InputLocationRefused",
    "capsule_ref",
    "check_input",
    "input_policy",
    "prepare_capsule_run",
]


def input_policy(settings: Settings, tenant: TenantSettings, *, local: bool = True) -> InputPolicy:
    """Where `tenant`'s runs read inputs: its own roots and buckets (`forge tenants update`).

    The deployment's FORGE_INPUT_ROOTS and FORGE_INPUT_BUCKETS are the default tenant's too,
    never another tenant's. `local=False` (the HTTP API: a caller's paths are not the server's)
    reads no local root at all.
    """
    roots = [Path(r) for r in tenant.input_roots]
    buckets = list(tenant.buckets)
    if tenant.tenant_id == DEFAULT_TENANT:
        roots += settings.input_roots
        buckets += [InputBucket(bucket=b) for b in settings.input_buckets]
    return InputPolicy(
        tuple(roots) if local else (),
        tuple(buckets),
        settings.s3_endpoint,
        tenant=tenant.tenant_id,
    )


def prepare_capsule_run(
    capsules: CapsuleStore,
    artifacts: ArtifactStore,
    policy: InputPolicy,
    scope: Scope,
    ref: str,
    *,
    inputs: Mapping[str, str],
    params: Mapping[str, str],
    fresh: Sequence[str] = (),
) -> CapsuleRun:
    """A capsule run reading inputs where `policy` allows (see input_policy), with a new run id."""
    if policy.tenant != scope.tenant:
        raise ValueError(f"input policy of tenant {policy.tenant!r} for a run of {scope.tenant!r}")
    return capsule_runs.prepare_capsule_run(
        capsules,
        artifacts,
        policy,
        scope,
        ref,
        run_id=new_run_id(scope.tenant),
        inputs=inputs,
        params=params,
        fresh=fresh,
    )
