"""The `LadderModel` protocol: what L1, L2 and L6 ask of a model, and what they get back.

The model layer supplies the real implementation. Exceptions a model raises (timeouts,
transport errors) propagate out of `run_ladder` untouched: retrying is Temporal's job.
Malformed answers (a patch that is not a list of operations, an unknown severity) are
the ladder's to judge and become findings.
"""

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import Field

from compiler.ladder.result import Finding, Severity
from schemas.base import FrozenModel


class PatchRequest(FrozenModel):
    """L2: the payload does not validate; propose value fixes as RFC 6902 operations."""

    payload: Any
    json_schema: dict[str, Any]
    errors: list[Finding]
    allowed_ops: list[str] = Field(default_factory=lambda: ["replace", "add"])


class PatchProposal(FrozenModel):
    """A model's answer to a PatchRequest: operations plus one line on why."""

    operations: list[Any]
    rationale: str = ""


class ReviewRequest(FrozenModel):
    """L6: review the payload's meaning against its contract and domain rules."""

    payload: Any
    json_schema: dict[str, Any]
    rules: list[dict[str, Any]]
    findings: list[Finding]


class ReviewFinding(FrozenModel):
    path: str = ""
    severity: Severity
    message: str


class ReviewVerdict(FrozenModel):
    """A model's review: findings, and optionally value fixes as RFC 6902 operations."""

    findings: list[ReviewFinding] = Field(default_factory=list)
    operations: list[Any] = Field(default_factory=list)
    rationale: str = ""


class LadderModel(Protocol):
    """What the model-powered stages call; implementations live in the model layer."""

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """L1: one vector per text, for similarity between field names."""
        ...

    def propose_patch(self, request: PatchRequest) -> PatchProposal:
        """L2: value fixes for a payload that fails its schema."""
        ...

    def review(self, request: ReviewRequest) -> ReviewVerdict:
        """L6: an expert review of a payload that passed every deterministic stage."""
        ...
