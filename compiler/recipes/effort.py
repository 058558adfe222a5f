"""Effort routing (seed 004 §7): classify a prompt into a tier, and what each tier sets for a run.

The signals are cheap and language-level: length, clauses, code, paths, distinct hard-work verbs,
breadth cues (weighted double), questions, and a word-boundary set of conversational tokens. A
prompt that asks for hard work is never trivial however short it is.
"""

import re

from compiler.recipes.text import stem
from schemas.base import FrozenModel
from schemas.recipes import Effort, EffortPolicy

DEEP_VERBS = frozenset(
    stem(w)
    for w in """
    architect design investigate refactor migrate audit debug optimise optimize diagnose
    reconcile analyze analyse benchmark profile harden review rewrite implement integrate
    troubleshoot evaluate verify prove restructure overhaul port scale secure
    """.split()
)
ULTRA_CUES = (
    "comprehensive",
    "exhaustive",
    "exhaustively",
    "end-to-end",
    "end to end",
    "entire codebase",
    "whole codebase",
    "deep dive",
    "be generous",
    "thorough",
    "thoroughly",
    "leave no stone unturned",
    "every single",
    "full audit",
    "from scratch",
    "production-grade",
    "maximum effort",
)
TRIVIAL = re.compile(
    r"\b(thanks|thank you|thx|ty|hi|hello|hey|ok|okay|cool|great|nice|got it|sounds good|"
    r"bye|good morning|good night|cheers|yes|no|sure|lol|what time is it)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"(\band\b|\bthen\b|\balso\b|;|,|\n\s*[-*\d]|\n)", re.IGNORECASE)
_CODE = re.compile(r"```|`[^`]+`|\bdef \w+\(|\bclass \w+|=>|\{\s*\"|\w+\(\)")
_PATH = re.compile(
    r"(?:^|\s)(?:\.{0,2}/)?[\w.-]+/[\w./-]+|\b\w+\.(?:py|ts|js|go|rs|java|csv|json|yaml|yml|md|sql|toml)\b"
)
_WORD = re.compile(r"[A-Za-z0-9'_-]+")


class EffortSignals(FrozenModel):
    words: int
    clauses: int
    has_code: bool
    has_paths: bool
    deep_verbs: list[str]
    ultra_cues: list[str]
    questions: int
    trivial_hit: bool
    score: int
    tier: Effort


def effort_signals(prompt: str) -> EffortSignals:
    """CLASSIFY_EFFORT of seed 004 §7.2, with the signals it used (for the trail)."""
    text = prompt.strip()
    lower = text.lower()
    ws = _WORD.findall(text)
    n = len(ws)
    clauses = len(_CLAUSE.findall(text)) + (1 if n else 0)
    has_code = bool(_CODE.search(text))
    has_paths = bool(_PATH.search(text))
    deep = sorted({stem(w.lower()) for w in ws} & DEEP_VERBS)
    ultra = [c for c in ULTRA_CUES if re.search(rf"\b{re.escape(c)}\b", lower)]
    questions = text.count("?")
    score = 0
    score += (n > 40) + (n > 120) + (n > 300)
    score += (clauses >= 4) + (clauses >= 10)
    score += has_code + has_paths
    score += min(4, len(deep))
    score += min(4, 2 * len(ultra))
    score += questions >= 3
    # Conversational only: a greeting or thanks with at most two other words around it
    # ("hey, the checkout page crashes on submit" is a request, not small talk).
    trivial_hit = bool(TRIVIAL.search(text)) and len(_WORD.findall(TRIVIAL.sub(" ", text))) <= 2
    tier: Effort
    if not deep and not ultra and (trivial_hit or (n <= 4 and score == 0) or n == 0):
        tier = "trivial"
    elif score >= 7 or len(ultra) >= 2:
        tier = "ultra"
    elif score >= 4:
        tier = "deep"
    else:
        tier = "standard"
    if tier == "standard" and len(deep) >= 3:
        tier = "deep"
    return EffortSignals(
        words=n,
        clauses=clauses,
        has_code=has_code,
        has_paths=has_paths,
        deep_verbs=deep,
        ultra_cues=ultra,
        questions=questions,
        trivial_hit=trivial_hit,
        score=score,
        tier=tier,
    )


def classify_effort(prompt: str) -> Effort:
    """Trivial | standard | deep | ultra."""
    return effort_signals(prompt).tier


EFFORT_POLICIES: dict[str, EffortPolicy] = {
    "trivial": EffortPolicy(
        tier="trivial",
        model_tier="minimal",
        thinking_budget_tokens=0,
        max_parallel_steps=1,
        orchestration="none",
        plan=False,
    ),
    "standard": EffortPolicy(
        tier="standard",
        model_tier="standard",
        thinking_budget_tokens=2048,
        max_parallel_steps=2,
        orchestration="solo",
        plan=True,
    ),
    "deep": EffortPolicy(
        tier="deep",
        model_tier="maximum",
        thinking_budget_tokens=16384,
        max_parallel_steps=4,
        orchestration="parallel",
        plan=True,
    ),
    "ultra": EffortPolicy(
        tier="ultra",
        model_tier="maximum",
        thinking_budget_tokens=32768,
        max_parallel_steps=8,
        orchestration="full-workflow",
        plan=True,
        verify_recipe="doubt-driven-verify",
    ),
}


def effort_policy(tier: Effort) -> EffortPolicy:
    return EFFORT_POLICIES[tier]
