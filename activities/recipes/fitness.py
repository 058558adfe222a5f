"""Recipe fitness (seed 004 §11.2): per-recipe outcomes projected from runs tagged with a recipe.

A run counts for a recipe only through an explicit `recipe:<owner>/<slug>` tag in its
`run.tagged.v1` event, so an untagged run is never credited to (or held against) any recipe, and
the key is the full owner/slug, so two owners sharing a slug never share a record. A run counts
once it has finished (`run.completed.v1` or `run.failed.v1`); a running one is not yet evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from activities.compile.typelib import STDLIB_DIR
from activities.store.events import EventStore
from compiler.recipes.match import Fitness
from schemas.budget import MODEL_CALLED
from schemas.event_catalogue import RUN_COMPLETED, RUN_FAILED, RUN_STARTED
from schemas.events import Event
from schemas.recipes import RUN_TAGGED, RecipeFitness

__all__ = [
    "FULL_WEIGHT_RUNS",
    "RUN_COMPLETED",
    "RUN_FAILED",
    "RUN_STARTED",
    "TAG_PREFIX",
    "fitness_lookup",
    "library_dirs",
    "recipe_fitness",
]

TAG_PREFIX = "recipe:"
FULL_WEIGHT_RUNS = 5  # below this many finished runs a record counts proportionally less
_EVERYTHING = 2**31 - 1  # list_events has no paging; this limit reads every matching row

_RunKey = tuple[str, str]  # (tenant_id, run_id): run ids are only trusted within a tenant


def library_dirs(packs_path: Sequence[Path], home: Path) -> list[Path]:
    """Recipe directories in read precedence (a later one wins a slug); missing ones skipped.

    The stdlib first, then `<pack>/recipes` of each pack directory, then `home/recipes`, the
    writable overlay that authored and imported recipes go to.
    """
    candidates = [STDLIB_DIR / "recipes", *(Path(p) / "recipes" for p in packs_path)]
    candidates.append(home / "recipes")
    return [d for d in candidates if d.is_dir()]


@dataclass
class _Tally:
    runs: int = 0
    successes: int = 0
    latencies: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def record(self) -> tuple[int, int, float | None, float | None]:
        latency = sum(self.latencies) / len(self.latencies) if self.latencies else None
        tokens = sum(self.tokens) / len(self.tokens) if self.tokens else None
        return self.runs, self.successes, latency, tokens


def recipe_fitness(events: EventStore, *, tenant_id: str | None = None) -> dict[str, RecipeFitness]:
    """Success rate, mean latency and mean tokens of every tagged recipe, keyed by owner/slug."""
    tagged = _tagged_runs(
        events.list_events(type=RUN_TAGGED, tenant_id=tenant_id, limit=_EVERYTHING)
    )
    tallies: dict[str, _Tally] = {}
    for (tenant, run_id), keys in sorted(tagged.items()):
        outcome = _outcome(events.list_events(run_id=run_id, tenant_id=tenant, limit=_EVERYTHING))
        if outcome is None:
            continue  # still running: not evidence yet
        success, latency, tokens = outcome
        for key in sorted(keys):
            tally = tallies.setdefault(key, _Tally())
            tally.runs += 1
            tally.successes += success
            tally.tokens.append(tokens)
            if latency is not None:
                tally.latencies.append(latency)
    return {key: _fitness(key, tally) for key, tally in sorted(tallies.items())}


def fitness_lookup(table: dict[str, RecipeFitness]) -> Fitness:
    """The matcher's fitness seam: the adjustment recorded for an owner/slug, None when none.

    The matcher asks for `owner/slug` and then for the bare slug. It asks for the bare slug only
    after its own owner/slug had no record, so any record found under that slug belongs to a
    different owner; answering would credit one owner's runs to another's recipe. A bare slug
    therefore has no record.
    """
    adjustments = {key: record.adjustment for key, record in table.items()}

    def lookup(key: str) -> float | None:
        return adjustments.get(key) if "/" in key else None

    return lookup


def _fitness(key: str, tally: _Tally) -> RecipeFitness:
    runs, successes, latency, tokens = tally.record()
    rate = successes / runs
    return RecipeFitness(
        key=key,
        runs=runs,
        successes=successes,
        success_rate=rate,
        mean_latency_s=latency,
        mean_tokens=tokens,
        adjustment=2.0 * (rate - 0.5) * min(1.0, runs / FULL_WEIGHT_RUNS),
    )


def _tagged_runs(tag_events: Iterable[Event]) -> dict[_RunKey, set[str]]:
    """owner/slug keys per run; a run tagged twice (a retried tag) has the union of its tags."""
    runs: dict[_RunKey, set[str]] = {}
    for event in tag_events:
        if event.run_id is None:
            continue
        keys = {k for k in map(_recipe_key, _tags(event)) if k is not None}
        if keys:
            runs.setdefault((event.scope.tenant, event.run_id), set()).update(keys)
    return runs


def _tags(event: Event) -> list[str]:
    tags = event.payload.get("tags")
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _recipe_key(tag: str) -> str | None:
    """`recipe:<owner>/<slug>` -> owner/slug; anything else (other tags, a bare slug) -> None."""
    if not tag.startswith(TAG_PREFIX):
        return None
    owner, sep, slug = tag[len(TAG_PREFIX) :].partition("/")
    if not sep or not owner or not slug or "/" in slug:
        return None
    return f"{owner}/{slug}"


def _outcome(run_events: Sequence[Event]) -> tuple[bool, float | None, int] | None:
    """(succeeded, seconds from start to finish, model tokens) of a finished run; None if running.

    A run that records both outcomes (failed, then resumed to completion) counts by its last one.
    """
    finished = [e for e in run_events if e.type in (RUN_COMPLETED, RUN_FAILED)]
    if not finished:
        return None
    last = max(enumerate(finished), key=lambda pair: (pair[1].timestamp, pair[0]))[1]
    started = [e.timestamp for e in run_events if e.type == RUN_STARTED]
    latency = (last.timestamp - min(started)).total_seconds() if started else None
    tokens = sum(_model_tokens(e) for e in run_events if e.type == MODEL_CALLED)
    return last.type == RUN_COMPLETED, latency, tokens


def _model_tokens(event: Event) -> int:
    total = 0
    for name in ("input_tokens", "output_tokens"):
        value = event.payload.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total
