"""The guard (L3) with the credential rules against the guard with only today's detectors.

Both sides scan the same payloads in the same run: the ladder benchmark's 200 typical
50-field payloads (the issue's goal: within 3x of before). The baseline runs the detectors
the guard had before issue 18 (PII and seven credential shapes);
the measured side runs every detector (gitleaks' rule set and Forge's context rules added).
Recall and false positives on the corpus (tests/guard/corpus.py) are reported with the figures.

Run on its own with `python -m tests.bench.bench_guard`.
"""

from collections.abc import Callable
from typing import Any

from compiler.ladder.contract import ALL_DETECTORS, GuardConfig, LadderContract
from compiler.ladder.guard import scan_document
from tests.bench.bench_ladder import _median_ms, payloads
from tests.bench.report import run_alone
from tests.guard.corpus import benign, samples
from workers.cli.guard import scan_text

GOAL_RATIO = 3.0
BEFORE = tuple(d for d in ALL_DETECTORS if d not in ("credential", "secret_field"))


def _contract(detectors: tuple[Any, ...]) -> LadderContract:
    return LadderContract(
        json_schema={"type": "object"}, top_level="object", guard=GuardConfig(detectors=detectors)
    )


def _measure(label: str, docs: list[Any]) -> dict[str, Any]:
    new, old = _contract(ALL_DETECTORS), _contract(BEFORE)

    def scan(contract: LadderContract) -> Callable[[], None]:
        return lambda: [scan_document(d, contract) for d in docs] and None

    new_ms, old_ms = _median_ms(scan(new)), _median_ms(scan(old))
    ratio = new_ms / old_ms
    return {
        "name": f"guard.scan.{label}",
        "documents": len(docs),
        "ms": round(new_ms, 2),
        "baseline": "the guard's detectors before issue 18, same documents",
        "baseline_ms": round(old_ms, 2),
        "ratio_to_baseline": round(ratio, 2),
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio <= GOAL_RATIO,
        "figure": f"{new_ms * 1000 / len(docs):.0f} µs/document",
        "versus": f"{ratio:.2f}× before ({old_ms * 1000 / len(docs):.0f} µs/document)",
        "goal": f"≤ {GOAL_RATIO:.0f}×",
    }


def _quality() -> dict[str, Any]:
    corpus = samples()
    caught = sum(1 for _, s in corpus if scan_text(s))
    texts = benign()
    flagged = sum(1 for t in texts if scan_text(t))
    recall, fp = caught / len(corpus), flagged / len(texts)
    return {
        "name": "guard.corpus",
        "samples": len(corpus),
        "benign": len(texts),
        "recall": round(recall, 4),
        "false_positive_rate": round(fp, 4),
        "meets_goal": recall >= 0.95 and fp <= 0.01,
        "figure": f"recall {recall:.1%} over {len(corpus)} samples",
        "versus": f"false positives {fp:.2%} of {len(texts)} benign strings",
        "goal": "recall ≥ 95%, false positives ≤ 1%",
    }


def run() -> list[dict[str, Any]]:
    return [_measure("ladder_payloads", payloads(messy=True)), _quality()]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
