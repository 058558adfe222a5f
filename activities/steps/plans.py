"""Compiled plans read from the artifact store, parsed once per worker."""

from activities.store.artifacts import ArtifactStore
from schemas.artifacts import ArtifactRef
from schemas.compiled import CompiledPlan

MAX_PLAN_BYTES = 64 * 1024 * 1024


class CompiledPlans:
    """The plans a worker's step activities and run__finalize read, each parsed once."""

    def __init__(self, artifacts: ArtifactStore) -> None:
        self._artifacts = artifacts
        self._plans: dict[str, CompiledPlan] = {}

    def get(self, ref: ArtifactRef) -> CompiledPlan:
        if ref.sha256 not in self._plans:
            raw = self._artifacts.read_bytes(ref.sha256, MAX_PLAN_BYTES)
            self._plans[ref.sha256] = CompiledPlan.model_validate_json(raw)
        return self._plans[ref.sha256]
