"""References to stored artifacts: payloads carry these, never the bytes."""

from pydantic import Field

from schemas.base import FrozenModel


class ArtifactRef(FrozenModel):
    """A content-addressed artifact as a run sees it."""

    artifact_id: str = Field(description="sha256:<hex> of the content")
    path: str = Field(description="the logical path inside the run workspace")
    sha256: str
    size_bytes: int = Field(ge=0)
    media_type: str | None = None


class Provenance(FrozenModel):
    """Where a published artifact came from."""

    run_id: str
    step_key: str
    contract_hash: str
    input_hashes: dict[str, str] = Field(default_factory=dict)
    code_hash: str | None = None
    attempt: int = Field(ge=1, default=1)
