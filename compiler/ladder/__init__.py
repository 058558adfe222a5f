"""The validation ladder (seed 000 Part III): one module per stage, one runner.

`run_ladder(payload, contract, *, stages=None, mode="block", model=None)` returns a
`LadderResult`; stage ids and order are documented in `compiler.ladder.runner`.
"""

from compiler.ladder.contract import (
    ALL_DETECTORS,
    CaseTransform,
    DateTransform,
    DomainRule,
    EnumCaseTransform,
    GuardConfig,
    LadderContract,
    LadderLimits,
    ScaleTransform,
    Transform,
)
from compiler.ladder.model import (
    LadderModel,
    PatchProposal,
    PatchRequest,
    ReviewFinding,
    ReviewRequest,
    ReviewVerdict,
)
from compiler.ladder.packs import contract_from_domain_pack
from compiler.ladder.result import Correction, Finding, LadderResult
from compiler.ladder.runner import STAGE_IDS, run_ladder
from compiler.ladder.similarity import NGramSimilarity, SimilarityBackend

__all__ = [
    "ALL_DETECTORS",
    "STAGE_IDS",
    "CaseTransform",
    "Correction",
    "DateTransform",
    "DomainRule",
    "EnumCaseTransform",
    "Finding",
    "GuardConfig",
    "LadderContract",
    "LadderLimits",
    "LadderModel",
    "LadderResult",
    "NGramSimilarity",
    "PatchProposal",
    "PatchRequest",
    "ReviewFinding",
    "ReviewRequest",
    "ReviewVerdict",
    "ScaleTransform",
    "SimilarityBackend",
    "Transform",
    "contract_from_domain_pack",
    "run_ladder",
]
