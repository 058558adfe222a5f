"""A worker deployment's versions, and making one of them current (`forge deploy`).

Workers register their version themselves (workers/process/versioning.py); which version new
runs go to is the deployment's current version, set here through Temporal's workflow service.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = ["DeploymentRefused", "DeploymentView", "Promotion", "VersionView", "describe", "promote"]

_IDENTITY = "forge deploy"
_STATUS_PREFIX = "WORKER_DEPLOYMENT_VERSION_STATUS_"
_DRAINAGE_PREFIX = "VERSION_DRAINAGE_STATUS_"


class DeploymentRefused(ForgeError):
    """Temporal refused to read or change a worker deployment."""

    code = ErrorCode.DEPLOYMENT_REFUSED


class VersionView(BaseModel):
    """One build of a deployment, as Temporal reports it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    build_id: str
    # created | current | ramping | draining | drained | inactive (Temporal's version status)
    status: str
    # draining | drained while it is no longer current; unspecified until the server checks
    drainage: str


class DeploymentView(BaseModel):
    """A worker deployment: its current build, and every build whose workers have polled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    current_build_id: str | None
    ramping_build_id: str | None
    versions: tuple[VersionView, ...]


class Promotion(BaseModel):
    """A build made current: new runs go to it; runs pinned elsewhere stay where they are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deployment: str
    build_id: str
    previous_build_id: str | None


def _enum_word(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).lower()


async def describe(client: Client, deployment: str) -> DeploymentView:
    """The deployment's routing and versions.

    Raises:
        DeploymentRefused: there is no such deployment (no worker of it has polled), or the
            server refused the read.
    """
    request = DescribeWorkerDeploymentRequest(
        namespace=client.namespace, deployment_name=deployment
    )
    try:
        info = (
            await client.workflow_service.describe_worker_deployment(request)
        ).worker_deployment_info
    except RPCError as exc:
        raise DeploymentRefused(
            f"cannot read worker deployment {deployment!r} in namespace {client.namespace!r}: "
            f"{exc.message}",
            hint=f"start a worker with FORGE_DEPLOYMENT_NAME={deployment} (`forge worker`) first",
        ) from None
    routing = info.routing_config
    versions = tuple(
        VersionView(
            build_id=summary.deployment_version.build_id,
            status=_enum_word(WorkerDeploymentVersionStatus.Name(summary.status), _STATUS_PREFIX),
            drainage=_enum_word(
                VersionDrainageStatus.Name(summary.drainage_info.status), _DRAINAGE_PREFIX
            ),
        )
        for summary in sorted(info.version_summaries, key=lambda s: s.create_time.ToDatetime())
    )
    return DeploymentView(
        name=info.name,
        current_build_id=routing.current_deployment_version.build_id or None,
        ramping_build_id=routing.ramping_deployment_version.build_id or None,
        versions=versions,
    )


async def promote(client: Client, deployment: str, build_id: str) -> Promotion:
    """Make `build_id` the current version of `deployment`: new runs start on its workers.

    Temporal refuses a build none of whose workers has polled every task queue of the current
    version yet, so promote after the new workers are up.

    Raises:
        DeploymentRefused: the deployment or build is unknown, or the server refused the change.
    """
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=deployment,
        build_id=build_id,
        identity=_IDENTITY,
    )
    try:
        response = await client.workflow_service.set_worker_deployment_current_version(request)
    except RPCError as exc:
        raise DeploymentRefused(
            f"cannot make build {build_id!r} current in worker deployment {deployment!r}: "
            f"{exc.message}",
            hint=(
                f"start a worker with FORGE_DEPLOYMENT_NAME={deployment} FORGE_BUILD_ID={build_id} "
                "first; `forge deploy status` lists the builds that have polled"
            ),
        ) from None
    return Promotion(
        deployment=deployment,
        build_id=build_id,
        previous_build_id=response.previous_deployment_version.build_id or None,
    )
