"""Starting a capsule run from the CLI (and later the API): Settings say where inputs may be."""

from collections.abc import Mapping, Sequence

from activities import capsule_runs
from activities.capsule_runs import (
    CapsuleRun,
    InputLocationRefused,
    InputPolicy,
    capsule_ref,
    check_input,
)
from activities.store.artifacts import ArtifactStore
from activities.store.capsules import CapsuleStore
from schemas.scope import Scope
from workers.runs import new_run_id
from workers.settings import Settings

__all__ = [
    "CapsuleRun",
    "InputLocationRefused",
    "capsule_ref",
    "check_input",
    "input_policy",
    "prepare_capsule_run",
]


def input_policy(settings: Settings) -> InputPolicy:
    """FORGE_INPUT_ROOTS, FORGE_INPUT_BUCKETS and the S3 endpoint, as a capsule run reads them."""
    return InputPolicy(settings.input_roots, settings.input_buckets, settings.s3_endpoint)


def prepare_capsule_run(
    capsules: CapsuleStore,
    artifacts: ArtifactStore,
    settings: Settings,
    scope: Scope,
    ref: str,
    *,
    inputs: Mapping[str, str],
    params: Mapping[str, str],
    fresh: Sequence[str] = (),
) -> CapsuleRun:
    """A capsule run under the settings' input policy, with a new run id."""
    return capsule_runs.prepare_capsule_run(
        capsules,
        artifacts,
        input_policy(settings),
        scope,
        ref,
        run_id=new_run_id(),
        inputs=inputs,
        params=params,
        fresh=fresh,
    )
