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
from collections.abc import Iterable
from pathlib import Path

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from workers.settings import Settings

__all__ = [
    "BEHAVIOUR",
    "CODE_PACKAGES",
    "DATA_DIRS",
    "build_id_of",
    "code_hash",
    "default_build_id",
    "installed_distributions",
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
# Data the workers read (profiles, types, recipes YAML): a change to any file of them is too.
DATA_DIRS = ("stdlib",)
_HASH_CHARS = 12


@functools.cache
def default_build_id() -> str:
    """`<forge version>-<12 hex digits>`: the installed version and a hash of this release.

    The package version alone does not change between commits of a checkout, nor with the
    dependencies; the hash (`code_hash`) of the code, its data and the installed distributions
    does, and is the same on every host running the same release, so workers of one release agree
    on their build without configuration.
    """
    try:
        version = importlib.metadata.version("forge")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        version = "0"
    return f"{version}-{code_hash(Path(__file__).resolve().parents[2])}"


def installed_distributions() -> list[str]:
    """`name==version` of every distribution this interpreter sees, sorted, without repeats."""
    return sorted(
        {
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in importlib.metadata.distributions()
            if dist.metadata["Name"]
        }
    )


def code_hash(root: Path, distributions: Iterable[str] | None = None) -> str:
    """12 hex digits of sha256 over this release: code, data and dependencies, in path order.

    Every module of CODE_PACKAGES and every file of DATA_DIRS under `root` (path and content),
    then `distributions` (`name==version` lines; default: `installed_distributions()`), so two
    releases differing only in a dependency or a stdlib profile are different builds.
    """
    digest = hashlib.sha256()
    files = [path for package in CODE_PACKAGES for path in sorted((root / package).rglob("*.py"))]
    files += [
        path
        for directory in DATA_DIRS
        for path in sorted((root / directory).rglob("*"))
        if path.is_file() and "__pycache__" not in path.relative_to(root).parts
    ]
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    for line in installed_distributions() if distributions is None else distributions:
        digest.update(line.encode())
        digest.update(b"\n")
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
