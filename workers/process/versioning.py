"""Worker versioning: which Temporal worker deployment version this process's workers are.

With FORGE_DEPLOYMENT_NAME set, every Worker of the process registers as version
`<deployment>.<build id>` and every Forge workflow it runs is pinned (BEHAVIOUR), so a run stays
on the version it started on while runs started after another version became current go to
that one (docs/deployment.md, rolling upgrades).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from workers.settings import Settings

__all__ = [
    "BEHAVIOUR",
    "CODE_PACKAGES",
    "build_id_of",
    "code_hash",
    "default_build_id",
    "deployment_config",
    "version_of",
]

# Every Forge workflow (a run, a schedule's action, a webhook delivery) stays on the version it
# started on, its continue-as-new runs and same-queue children with it: a new release never
# replays an old run's history, and a version drains once its runs end. It is the versioned
# Worker's default, not each workflow's `@workflow.defn(versioning_behavior=...)`: a workflow
# task reporting a behaviour is refused from an unversioned worker ("versioning behavior
# cannot be specified without deployment options being set with versioned mode"), and
# FORGE_DEPLOYMENT_NAME unset keeps workers unversioned. It changes no command, so recorded
# histories replay unchanged.
BEHAVIOUR = VersioningBehavior.PINNED
# The packages a worker runs: a change to any of them is a new build.
CODE_PACKAGES = ("activities", "compiler", "schemas", "workers", "workflows")
_HASH_CHARS = 12


@functools.cache
def default_build_id() -> str:
    """`<forge version>-<12 hex digits>`: the installed version and a hash of this code.

    The package version alone does not change between commits of a checkout; the hash of every
    module of CODE_PACKAGES (path and content) does, and is the same on every host running the
    same code, so workers of one release agree on their build without configuration.
    """
    try:
        version = importlib.metadata.version("forge")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        version = "0"
    return f"{version}-{code_hash(Path(__file__).resolve().parents[2])}"


def code_hash(root: Path) -> str:
    """12 hex digits of sha256 over every module of CODE_PACKAGES under `root`, in path order."""
    digest = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:_HASH_CHARS]


def build_id_of(settings: Settings) -> str:
    """The build id these settings name (FORGE_BUILD_ID), else this installation's."""
    return settings.build_id or default_build_id()


def version_of(settings: Settings) -> WorkerDeploymentVersion | None:
    """The deployment version these settings' workers register as; None when unversioned."""
    if settings.deployment_name is None:
        return None
    return WorkerDeploymentVersion(settings.deployment_name, build_id_of(settings))


def deployment_config(settings: Settings) -> WorkerDeploymentConfig | None:
    """The Worker option for these settings, or None: no deployment name, no versioning."""
    version = version_of(settings)
    if version is None:
        return None
    return WorkerDeploymentConfig(
        version=version, use_worker_versioning=True, default_versioning_behavior=BEHAVIOUR
    )
