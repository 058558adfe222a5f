"""What every stage receives (`StageContext`) and how it reports (`StageReport`)."""

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from compiler.ladder.contract import LadderContract
from compiler.ladder.model import LadderModel
from compiler.ladder.pointer import Path, encode
from compiler.ladder.result import Correction, CorrectionOp, Finding, Severity
from compiler.ladder.schemaview import SchemaView

Mode = Literal["block", "report"]


@dataclass(frozen=True)
class StageContext:
    """The run a stage belongs to: its contract, mode, model and the stages still to come."""

    contract: LadderContract
    mode: Mode
    model: LadderModel | None
    later: frozenset[str]
    view: SchemaView  # the contract's, fetched once per run (pydantic private attrs are slow)
    earlier_findings: tuple[Finding, ...] = ()


@dataclass
class StageReport:
    """Corrections and findings of one stage, plus the payload as the stage leaves it."""

    stage: str
    payload: Any
    corrections: list[Correction] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    sensitive: dict[str, str] = field(default_factory=dict)  # L3 only: raw match -> its mask
    detections: list[tuple[str, str, str]] = field(default_factory=list)  # L3: pointer, kind, mask

    def correct(self, path: Path, op: CorrectionOp, before: Any, after: Any, reason: str) -> None:
        """Record one change the stage made (containers are copied: later stages may edit)."""
        if isinstance(before, (dict, list)):
            before = copy.deepcopy(before)
        if isinstance(after, (dict, list)):
            after = copy.deepcopy(after)
        self.corrections.append(
            Correction(
                stage=self.stage,
                path=encode(path),
                op=op,
                before=before,
                after=after,
                reason=reason,
            )
        )

    def find(self, path: Path | str, severity: Severity, message: str) -> None:
        """Record one finding (a path may be given as tokens or as a pointer)."""
        pointer = path if isinstance(path, str) else encode(path)
        self.findings.append(
            Finding(stage=self.stage, path=pointer, severity=severity, message=message)
        )

    @property
    def has_error(self) -> bool:
        return any(f.severity == "error" for f in self.findings)
