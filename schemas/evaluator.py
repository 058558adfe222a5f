"""The governed evaluator (seed 000 §6.3): evidence bundles, verdicts and the proofs they leave.

The executor produces; the evaluator judges. A bundle holds source evidence (what the work was
made from), derived evidence (what the work produced) and a rubric. The evaluator model answers
with a verdict that must validate against VERDICT_SCHEMA (full JSON Schema, draft 2020-12) before
anything trusts it; every verdict is persisted as a proof with the model call that produced it
and the sha256 of the bundle it judged.
"""

from typing import Any, Literal

from pydantic import Field

from schemas.base import FrozenModel
from schemas.bounds import LIST_MAX, PathText, Prose

VerdictValue = Literal["pass", "fail", "uncertain"]
Enforcement = Literal["block", "report"]
EVALUATION_PROOF = "evaluation.proof.v1"

VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "forge evaluator verdict",
    "type": "object",
    "required": ["verdict", "criteria", "summary"],
    "additionalProperties": False,
    "properties": {
        "verdict": {"enum": ["pass", "fail", "uncertain"]},
        "summary": {"type": "string", "minLength": 1, "maxLength": 4000},
        "criteria": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["criterion", "result", "rationale"],
                "additionalProperties": False,
                "properties": {
                    "criterion": {"type": "string", "minLength": 1},
                    "result": {"enum": ["pass", "fail", "uncertain"]},
                    "rationale": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "evidence_refs": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


class EvidenceItem(FrozenModel):
    """One file of a bundle: where it is, what it hashes to, and the text the evaluator reads."""

    path: str
    sha256: str
    size_bytes: int = Field(ge=0)
    text: str = Field(description="the file's text, capped; truncated says whether it was cut")
    truncated: bool = False


class EvidenceBundle(FrozenModel):
    """What the evaluator model receives for one item (seed 000 §6.3, evidence bundle)."""

    source: list[EvidenceItem] = Field(default_factory=list)
    derived: list[EvidenceItem] = Field(min_length=1)
    rubric: list[str] = Field(min_length=1)
    subject: str = Field(default="", description="what is judged, in a line")


class CriterionResult(FrozenModel):
    criterion: str
    result: VerdictValue
    rationale: str
    evidence_refs: list[str] = Field(default_factory=list)


class Verdict(FrozenModel):
    verdict: VerdictValue
    summary: str
    criteria: list[CriterionResult]


class EvaluationProof(FrozenModel):
    """The persisted proof of one evaluation (payload of evaluation.proof.v1)."""

    proof_id: str
    model_call_id: str
    model: str
    bundle_sha256: str
    rubric: list[str]
    verdict: VerdictValue
    criteria: list[CriterionResult]
    summary: str
    enforcement: Enforcement
    passed: bool = Field(description="verdict pass, or enforcement report")
    context_hash: str
    review_of: str | None = Field(
        default=None, description="a doubt-driven review: the step whose artifact was reviewed"
    )


class EvaluationSpec(FrozenModel):
    """An `evaluate` step's declared bundle: which inputs are source, which derived, the rubric.

    Without it an evaluate step judges every input as derived evidence against its
    success criteria.
    """

    source: list[PathText] = Field(
        default_factory=list, max_length=LIST_MAX, description="input paths (source evidence)"
    )
    derived: list[PathText] = Field(
        default_factory=list, max_length=LIST_MAX, description="input paths (what is judged)"
    )
    rubric: list[Prose] = Field(default_factory=list, max_length=LIST_MAX)
    enforcement: Enforcement = "block"
    cycles: int = Field(
        default=1,
        ge=1,
        le=3,
        description="doubt-driven review: fresh-context cycles until a verdict is pass or fail "
        "(an uncertain cycle starts another, up to this cap)",
    )
    contract: Prose = Field(
        default="", description="what the judged artifacts claim to do: the reviewer's contract"
    )
