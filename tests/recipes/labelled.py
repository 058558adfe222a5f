"""The labelled prompt set and the figures computed over it (shared by tests and the benchmark).

Figures, each over tests/data/recipes/prompts.yaml against the curated library:
- top-1 accuracy: of the prompts whose `expect` names a recipe (any kind, anti-trigger entries
  naming the recipe that should win included), the share where that recipe is top-1 at tier
  low or high;
- NO-MATCH precision: of the prompts the matcher answers `none` for, the share labelled none or
  trivial (anti-trigger entries without an `expect` carry no such label and are left out);
- NO-MATCH recall: of the prompts labelled none, the share the matcher answers `none` for;
- anti-trigger precision: of the anti-trigger prompts, the share where the vetoed recipe is not
  selected at tier high;
- trivial detection: of the trivial prompts, the share classify_effort calls trivial; and the
  false-trivial rate, the share of the other prompts it calls trivial.
Paraphrases below the file's "held-out" comment were never used to choose recipe tags; their
rate is reported on its own row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.recipes import RecipeLibrary, classify_effort
from schemas.recipes import MatchResult

LABELS = Path(__file__).resolve().parents[1] / "data" / "recipes" / "prompts.yaml"
HELD_OUT = "held-out"
KINDS = ("direct", "paraphrase", "inflection", "typo", "no-match", "anti-trigger", "trivial")


@dataclass(frozen=True)
class Label:
    prompt: str
    kind: str
    expect: str | None
    veto: str | None
    held_out: bool = False  # below the file's "held-out" comment: never used to choose tags


@dataclass(frozen=True)
class Outcome:
    label: Label
    result: MatchResult
    effort: str

    @property
    def top(self) -> str | None:
        return self.result.selected.slug if self.result.selected else None

    @property
    def top1_ok(self) -> bool:
        return self.top == self.label.expect and self.result.tier != "none"

    @property
    def vetoed_ok(self) -> bool:
        return not (self.top == self.label.veto and self.result.tier == "high")

    @property
    def ok(self) -> bool:
        """Did this prompt get what its label asks for."""
        label = self.label
        if label.kind == "trivial":
            return self.effort == "trivial"
        if label.expect == "none":
            return self.result.tier == "none" and self.vetoed_ok
        if label.expect is not None:
            return self.top1_ok and self.vetoed_ok
        return self.vetoed_ok


@dataclass
class Report:
    outcomes: list[Outcome]
    by_kind: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (ok, n)

    def __post_init__(self) -> None:
        for kind in KINDS:
            mine = [o for o in self.outcomes if o.label.kind == kind]
            self.by_kind[kind] = (sum(o.ok for o in mine), len(mine))

    @property
    def held_out_paraphrase(self) -> tuple[int, int]:
        mine = [o for o in self.outcomes if o.label.kind == "paraphrase" and o.label.held_out]
        return sum(o.ok for o in mine), len(mine)

    @property
    def top1(self) -> tuple[int, int]:
        named = [o for o in self.outcomes if o.label.expect not in (None, "none", "trivial")]
        return sum(o.top1_ok for o in named), len(named)

    @property
    def no_match_precision(self) -> tuple[int, int]:
        said_none = [
            o
            for o in self.outcomes
            if o.result.tier == "none"
            and not (o.label.kind == "anti-trigger" and not o.label.expect)
        ]
        return sum(o.label.expect in ("none", "trivial") for o in said_none), len(said_none)

    @property
    def no_match_recall(self) -> tuple[int, int]:
        labelled = [o for o in self.outcomes if o.label.expect == "none"]
        return sum(o.result.tier == "none" for o in labelled), len(labelled)

    @property
    def anti_trigger_precision(self) -> tuple[int, int]:
        anti = [o for o in self.outcomes if o.label.kind == "anti-trigger"]
        return sum(o.vetoed_ok for o in anti), len(anti)

    @property
    def trivial_detection(self) -> tuple[int, int]:
        trivial = [o for o in self.outcomes if o.label.kind == "trivial"]
        return sum(o.effort == "trivial" for o in trivial), len(trivial)

    @property
    def false_trivial(self) -> tuple[int, int]:
        other = [o for o in self.outcomes if o.label.kind != "trivial"]
        return sum(o.effort == "trivial" for o in other), len(other)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def table(self) -> str:
        lines = [f"{'kind':<14}{'ok':>5}{'n':>5}{'rate':>8}"]
        for kind, (ok, n) in self.by_kind.items():
            lines.append(f"{kind:<14}{ok:>5}{n:>5}{rate((ok, n)):>8.1%}")
        ok, n = self.held_out_paraphrase
        lines.append(f"{'  held-out':<14}{ok:>5}{n:>5}{rate((ok, n)):>8.1%}")
        for name in (
            "top1",
            "no_match_precision",
            "no_match_recall",
            "anti_trigger_precision",
            "trivial_detection",
            "false_trivial",
        ):
            ok, n = getattr(self, name)
            lines.append(f"{name:<24}{ok:>4}/{n:<4}{rate((ok, n)):>8.1%}")
        for o in self.failures():
            best = [(s.slug, s.score) for s in o.result.considered[:3]]
            lines.append(
                f"FAIL {o.label.kind:<12} expect={o.label.expect} veto={o.label.veto} "
                f"got={o.top}/{o.result.tier} effort={o.effort}: {o.label.prompt!r} {best}"
            )
        return "\n".join(lines)


def rate(pair: tuple[int, int]) -> float:
    ok, n = pair
    return ok / n if n else 1.0


def load_labels(path: Path = LABELS) -> list[Label]:
    text = path.read_text(encoding="utf-8")
    raw: list[dict[str, Any]] = yaml.safe_load(text)
    node = yaml.compose(text)
    lines = [item.start_mark.line for item in node.value] if node is not None else []
    marker = next(
        (n for n, line in enumerate(text.split("\n")) if line.startswith("#") and HELD_OUT in line),
        None,
    )
    return [
        Label(
            prompt=str(e["prompt"]),
            kind=str(e["kind"]),
            expect=None if e.get("expect") is None else str(e["expect"]),
            veto=None if e.get("veto") is None else str(e["veto"]),
            held_out=marker is not None and line > marker,
        )
        for e, line in zip(raw, lines, strict=True)
    ]


def evaluate(
    labels: list[Label],
    library: RecipeLibrary,
    matcher: Callable[[str], MatchResult] | None = None,
) -> Report:
    run = matcher or library.match
    return Report([Outcome(lb, run(lb.prompt), classify_effort(lb.prompt)) for lb in labels])
