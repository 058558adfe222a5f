"""Compiled plans read from the artifact store, parsed once per worker."""

from activities.store.artifacts import ArtifactStore
from schemas.artifacts import ArtifactRef
from schemas.compiled import CompiledPlan
from schemas.scope import Scope

MAX_PLAN_BYTES = 64 * 1024 * 1024


class CompiledPlans:
    """The plans a worker's step activities and run__finalize read, each parsed once."""

    def __init__(self, artifacts: ArtifactStore) -> None:
        self._artifacts = artifacts
        # Keyed by tenant too: a plan one tenant read is never served to another from here.
        self._plans: dict[tuple[str, str], CompiledPlan] = {}

    def get(self, scope: Scope, ref: ArtifactRef) -> CompiledPlan:
        """The compiled plan `ref` names, as the scope's tenant stored it."""
        key = (scope.tenant, ref.sha256)
        if key not in self._plans:
            raw = self._artifacts.read_bytes(scope, ref.sha256, MAX_PLAN_BYTES)
            self._plans[key] = CompiledPlan.model_validate_json(raw)
        return self._plans[key]
