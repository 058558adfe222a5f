"""Scores a step's text against pack triggers, goals and disambiguation rules (Pass B)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from compiler.plan.text import contains_phrase, stems
from schemas.typesystem import DisambiguationRule

TRIGGER_WEIGHT = 3.0
PARTIAL_TRIGGER_WEIGHT = 1.0
ENTITY_WEIGHT = 4.0
HINT_WEIGHT = 6.0
VOCAB_WEIGHT = 0.3
VOCAB_CAP = 2.4
THRESHOLD = 2.0
AMBIGUITY_RATIO = 0.85
DISAMBIGUATION_PENALTY = 0.25
DISAMBIGUATION_BONUS = 1.0


@dataclass(frozen=True)
class PackText:
    """What the scorer knows of one pack; built once per library."""

    pack_id: str
    triggers: tuple[tuple[str, tuple[str, ...]], ...]
    vocabulary: frozenset[str]
    rules: tuple[DisambiguationRule, ...]


@dataclass
class Score:
    pack_id: str
    value: float = 0.0
    evidence: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Selection:
    pack_ids: list[str]
    status: str
    confidence: float
    reason: str
    warnings: list[str]


def pack_text(
    pack_id: str, triggers: Sequence[str], prose: Sequence[str], rules: Sequence[DisambiguationRule]
) -> PackText:
    vocab = frozenset(s for text in prose for s in stems(text))
    return PackText(pack_id, tuple((t, stems(t)) for t in triggers), vocab, tuple(rules))


def score_packs(
    text: tuple[str, ...], packs: Sequence[PackText], bonus: Mapping[str, tuple[float, str]]
) -> list[Score]:
    """Score every pack; `bonus` adds structural evidence (entities, slots, hints)."""
    scores = {p.pack_id: Score(p.pack_id) for p in packs}
    words = frozenset(text)
    for pack in packs:
        s = scores[pack.pack_id]
        for original, trig in pack.triggers:
            if contains_phrase(text, trig):
                s.value += TRIGGER_WEIGHT
                s.evidence.append(f"trigger '{original}'")
            elif len(trig) >= 2 and sum(t in words for t in trig) * 3 >= len(trig) * 2:
                s.value += PARTIAL_TRIGGER_WEIGHT
        shared = len(words & pack.vocabulary)
        s.value += min(VOCAB_CAP, VOCAB_WEIGHT * shared)
        if pack.pack_id in bonus:
            amount, why = bonus[pack.pack_id]
            s.value += amount
            if why:
                s.evidence.append(why)
    for pack in packs:
        if scores[pack.pack_id].value <= 0:
            continue
        for rule in pack.rules:
            term = next((t for t in rule.when_any if contains_phrase(text, stems(t))), None)
            if term is None:
                continue
            scores[pack.pack_id].value += DISAMBIGUATION_BONUS
            scores[pack.pack_id].evidence.append(f"disambiguation '{term}'")
            for other in rule.over:
                if other in scores:
                    scores[other].value *= DISAMBIGUATION_PENALTY
    return sorted(scores.values(), key=lambda s: (-s.value, s.pack_id))


def select(scores: Sequence[Score], family: str) -> Selection:
    """Pick the winning pack(s); near-ties are kept and flagged as ambiguous."""
    if not scores or scores[0].value < THRESHOLD:
        best = f" (best: {scores[0].pack_id} at {scores[0].value:.2f})" if scores else ""
        return Selection(
            [],
            "unresolved",
            0.0,
            f"no {family} pack scored above {THRESHOLD}{best}",
            [
                f"no {family} pack matched this step{best}; pin one with "
                f"{family}_pack_ids or add semantic_hints.{family}_terms"
            ],
        )
    top = scores[0]
    second = scores[1].value if len(scores) > 1 else 0.0
    chosen = [s for s in scores if s.value >= max(THRESHOLD, AMBIGUITY_RATIO * top.value)]
    strength = min(1.0, top.value / 8.0)
    margin = (top.value - second) / top.value
    confidence = round(strength * (0.5 + 0.5 * margin), 3)
    why = ", ".join(top.evidence[:3]) or "shared vocabulary"
    reason = f"{family} {top.pack_id} ({why})"
    if len(chosen) > 1:
        names = ", ".join(f"{s.pack_id} ({s.value:.2f})" for s in chosen)
        return Selection(
            [s.pack_id for s in chosen],
            "ambiguous",
            confidence,
            reason,
            [f"{family} packs nearly tie: {names}; pin one with {family}_pack_ids"],
        )
    return Selection([top.pack_id], "resolved", confidence, reason, [])
