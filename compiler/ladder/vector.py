"""L1 vector rename: an undeclared field renamed to the most similar declared one, if clear.

Renamed when the best score reaches `rename_threshold`, beats the runner-up by
`rename_margin`, and no other unknown field is as close to the same target; otherwise the
field is flagged and left alone, as is any name over 256 characters (it is never
embedded: comparing it would cost memory in proportion to its length). Candidates are
the declared properties the object lacks, so a rename never overwrites a value. The
backend is the model's `embed` when a model is given, else the deterministic n-gram
similarity.
"""

from typing import Any

from compiler.ladder.pointer import Path, encode
from compiler.ladder.result import Severity
from compiler.ladder.schemaview import SchemaNode, walk
from compiler.ladder.similarity import (
    BackendError,
    EmbeddingSimilarity,
    NGramSimilarity,
    SimilarityBackend,
)
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L1"
_UNRELATED = 0.3  # below this a name is not "close" to anything worth naming
_MAX_NAME = 256  # longer undeclared names are flagged, never embedded or compared


def _decide(
    unknown: list[str], candidates: list[str], scores: list[list[float]], ctx: StageContext
) -> dict[str, tuple[str, float] | str]:
    """For each unknown field: (target, score) to rename, or a message to flag it with."""
    threshold, margin = ctx.contract.rename_threshold, ctx.contract.rename_margin
    out: dict[str, tuple[str, float] | str] = {}
    for row, name in enumerate(unknown):
        ranked = sorted(zip(scores[row], candidates, strict=True), key=lambda p: (-p[0], p[1]))
        best_score, best = ranked[0]
        column = candidates.index(best)
        runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
        rivals = [
            u
            for r, u in enumerate(unknown)
            if r != row and scores[r][column] >= best_score - margin
        ]
        if best_score < _UNRELATED:
            out[name] = f"{name!r} is not declared and resembles no declared field"
        elif best_score < threshold:
            out[name] = (
                f"{name!r} is not declared; closest is {best!r} at {best_score:.2f}, below the "
                f"rename threshold {threshold:.2f}: not renamed, review it"
            )
        elif best_score - runner_up < margin:
            out[name] = (
                f"{name!r} is as close to {ranked[1][1]!r} ({runner_up:.2f}) as to {best!r} "
                f"({best_score:.2f}): ambiguous, not renamed"
            )
        elif rivals:
            out[name] = f"{name!r} and {rivals[0]!r} both resemble {best!r}: not renamed"
        else:
            out[name] = (best, best_score)
    return out


def vector(payload: Any, *, ctx: StageContext) -> StageReport:
    """Rename or flag the undeclared fields of every object the schema describes."""
    report = StageReport(STAGE, payload)
    backend: SimilarityBackend = (
        EmbeddingSimilarity(ctx.model)
        if ctx.model is not None
        else NGramSimilarity(ctx.view.memo(("ngram",), dict))
    )
    limit = ctx.contract.limits.max_rename_comparisons

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        if not isinstance(container, dict):
            return
        declared = ctx.view.shape(node).properties
        if not declared:
            return
        unknown = [k for k in container if ctx.view.child(node, k, declared_only=True) is None]
        for name in [k for k in unknown if len(k) > _MAX_NAME]:
            unknown.remove(name)
            report.find(
                (*path, name),
                "warning",
                f"{name[:40]!r}... is not declared and is {len(name)} characters long, too "
                f"long to be a field name (over {_MAX_NAME}): not compared, not renamed",
            )
        if not unknown:
            return
        candidates = [k for k in declared if k not in container]
        if not candidates:
            for name in unknown:
                report.find((*path, name), "info", f"{name!r} is not declared by the contract")
            return
        if len(unknown) * len(candidates) > limit:
            report.find(
                path,
                "warning",
                f"{len(unknown)} undeclared x {len(candidates)} missing "
                f"fields exceed limits.max_rename_comparisons ({limit}); L1 skipped here",
            )
            return
        try:
            scores = backend.similarities(unknown, candidates)
        except BackendError as exc:
            report.find(path, "warning", f"similarity backend failed: {exc}; nothing renamed")
            return
        renames: dict[str, str] = {}
        for name, decision in _decide(unknown, candidates, scores, ctx).items():
            if isinstance(decision, str):
                severity: Severity = "info" if decision.endswith("no declared field") else "warning"
                report.find((*path, name), severity, decision)
                continue
            target, score = decision
            renames[name] = target
            report.correct(
                (*path, target),
                "move",
                encode((*path, name)),
                encode((*path, target)),
                f"{name!r} resembles {target!r} (similarity {score:.2f})",
            )
        if renames:
            items = [(renames.get(k, k), v) for k, v in container.items()]
            container.clear()
            container.update(items)

    walk(payload, ctx.view, visit)
    return report
