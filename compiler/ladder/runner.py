"""`run_ladder`: the stages in their one order, block/report semantics, and the verdict.

Stage ids and order (every id appears in corrections and findings):
  L3 guard, L0 schema, L0b synonyms, L0c structural, L0d defaults, L0e transforms,
  L1 vector rename, L2 guarded patch, L4 conformance, L5 domain rules, L6 expert review.
Parsing (part of L0) always happens first, so that even L3 scans the parsed value.

In "block" mode the first stage that reports an error stops the run and is `blocked_by`; a
guard hit also withholds the payload. In "report" mode every stage runs and the errors
only make `ok` False; a guard hit there is redacted in place by L3 (so neither the later
stages nor the returned payload hold it) and keeps the payload away from the model (L2
and L6 are skipped, L1 uses the n-gram backend). Whatever the guard found is masked in
every finding and correction of the run, in any spelling (see `masking`). A payload that
cannot be parsed stops the run in either mode: no stage has anything to work on.
"""

from collections.abc import Callable, Sequence
from typing import Any, Literal

from compiler.ladder.conformance import conformance
from compiler.ladder.contract import LadderContract
from compiler.ladder.defaults import defaults
from compiler.ladder.domain import domain
from compiler.ladder.expert import expert
from compiler.ladder.guard import guard
from compiler.ladder.intake import intake
from compiler.ladder.masking import Masker
from compiler.ladder.model import LadderModel
from compiler.ladder.patch import patch
from compiler.ladder.result import Correction, Finding, LadderResult
from compiler.ladder.schema import schema
from compiler.ladder.stage import StageContext, StageReport
from compiler.ladder.structural import structural
from compiler.ladder.synonyms import synonyms
from compiler.ladder.transforms import transforms
from compiler.ladder.vector import vector

Stage = Callable[..., StageReport]
STAGES: tuple[tuple[str, Stage], ...] = (
    ("L3", guard),
    ("L0", schema),
    ("L0b", synonyms),
    ("L0c", structural),
    ("L0d", defaults),
    ("L0e", transforms),
    ("L1", vector),
    ("L2", patch),
    ("L4", conformance),
    ("L5", domain),
    ("L6", expert),
)
STAGE_IDS: tuple[str, ...] = tuple(s for s, _ in STAGES)
MODEL_STAGES = frozenset({"L2", "L6"})
_SEVERITY_RANK = {"error": 2, "warning": 1, "info": 0}


def _select(stages: Sequence[str] | None) -> list[str]:
    if stages is None:
        return list(STAGE_IDS)
    if isinstance(stages, str):
        raise ValueError(f"stages must be a sequence of stage ids, not the string {stages!r}")
    unknown = sorted(set(stages) - set(STAGE_IDS))
    if unknown:
        raise ValueError(f"unknown ladder stages {unknown}; the stages are {list(STAGE_IDS)}")
    return [s for s in STAGE_IDS if s in stages]


class _Run:
    """The state of one run: what was corrected and found so far."""

    def __init__(self, contract: LadderContract, mode: str, model: LadderModel | None) -> None:
        self.contract, self.mode, self.model = contract, mode, model
        self.view = contract.view
        self.corrections: list[Correction] = []
        self.findings: list[Finding] = []
        self.sensitive: dict[str, str] = {}
        self.ran: list[str] = []
        self.withheld = False

    def context(self, later: list[str]) -> StageContext:
        return StageContext(
            contract=self.contract,
            mode=self.mode,  # type: ignore[arg-type]
            model=None if self.withheld else self.model,
            later=frozenset(later),
            view=self.view,
            earlier_findings=tuple(self.findings),
        )

    def take(self, report: StageReport) -> None:
        self.ran.append(report.stage)
        self.corrections += report.corrections
        self.findings += report.findings
        self.sensitive.update(report.sensitive)

    def skip(self, stage: str, why: str) -> None:
        self.findings.append(Finding(stage=stage, path="", severity="info", message=why))

    def result(self, payload: Any, blocked_by: str | None) -> LadderResult:
        findings = _capped(self.findings, self.contract.limits.max_findings)
        corrections = self.corrections
        if self.sensitive:
            masker = Masker(self.sensitive)
            findings = [_scrub_model(f, masker) for f in findings]
            corrections = [_scrub_model(c, masker) for c in corrections]
        return LadderResult(
            ok=not any(f.severity == "error" for f in self.findings),
            payload=payload,
            corrections=corrections,
            findings=findings,
            blocked_by=blocked_by,
            stages_run=self.ran,
        )


def _capped(findings: list[Finding], limit: int) -> list[Finding]:
    if len(findings) <= limit:
        return findings
    rest = findings[limit:]
    worst = max(rest, key=lambda f: _SEVERITY_RANK[f.severity]).severity
    summary = Finding(
        stage=rest[0].stage,
        path="",
        severity=worst,
        message=f"{len(rest)} more findings not shown (limits.max_findings)",
    )
    return [*findings[:limit], summary]


def _scrub_model(record: Any, masker: Masker) -> Any:
    data = record.model_dump()
    return type(record).model_validate({k: masker.value(v) for k, v in data.items()})


def run_ladder(
    payload: Any,
    contract: LadderContract,
    *,
    stages: Sequence[str] | None = None,
    mode: Literal["block", "report"] = "block",
    model: LadderModel | None = None,
) -> LadderResult:
    """Validate and correct a payload against a contract, stage by stage.

    Args:
        payload: A JSON value, or JSON text as `str` or UTF-8 `bytes`.
        contract: What the payload must conform to.
        stages: Stage ids to run (always in ladder order); None runs all of them.
        mode: "block" stops at the first stage reporting an error; "report" runs every stage.
        model: The model L1 (optional), L2 and L6 (required) call.

    Returns:
        The verdict, the corrected payload and every correction and finding.

    Raises:
        ValueError: `stages` names an unknown stage, or `mode` is not block or report.
    """
    if mode not in ("block", "report"):
        raise ValueError(f"mode must be 'block' or 'report', not {mode!r}")
    selected = _select(stages)
    run = _Run(contract, mode, model)
    taken = intake(payload, contract.limits)
    value = taken.value
    if "L3" in selected:
        scanned = guard(value if taken.problem is None else taken.text, ctx=run.context(selected))
        run.take(scanned)
        value = scanned.payload if taken.problem is None else None
        if scanned.has_error:
            if mode == "block":
                return run.result(None, "L3")
            run.withheld = True
    if taken.problem is not None:
        run.findings.append(
            Finding(stage="L0", path=taken.path, severity="error", message=taken.problem)
        )
        return run.result(None, "L0")
    return _climb(run, value, selected)


def _climb(run: _Run, value: Any, selected: list[str]) -> LadderResult:
    for position, (stage_id, stage) in enumerate(STAGES):
        if stage_id == "L3" or stage_id not in selected:
            continue
        if stage_id in MODEL_STAGES and run.model is None:
            run.skip(stage_id, f"{stage_id} skipped: it needs a LadderModel and none was given")
            continue
        if stage_id in MODEL_STAGES and run.withheld:
            run.skip(
                stage_id,
                f"{stage_id} skipped: the guard found sensitive content, which "
                "is never sent to a model",
            )
            continue
        later = [s for s, _ in STAGES[position + 1 :] if s in selected]
        report = stage(value, ctx=run.context(later))
        run.take(report)
        value = report.payload
        if run.mode == "block" and report.has_error:
            return run.result(value, stage_id)
    return run.result(value, None)
