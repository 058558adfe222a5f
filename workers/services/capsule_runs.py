"""Where a capsule run may read its inputs: the run's tenant's settings, and the deployment's.

The run itself is prepared by activities/capsules/prepare_run.prepare_capsule_run, the one
function the CLI, the API and scheduled runs call, with the policy built here.
"""

from pathlib import Path

from activities.capsules.prepare_run import InputPolicy
from schemas.scope import DEFAULT_TENANT
from schemas.tenant_settings import InputBucket, TenantSettings
from workers.settings import Settings

__all__ = ["input_policy"]


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
