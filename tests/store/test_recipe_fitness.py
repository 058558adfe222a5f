"""Recipe fitness projected from a real event store (seed 004 §11.2): only tagged, finished runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.compile.typelib import STDLIB_DIR
from activities.recipes.fitness import (
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    fitness_lookup,
    library_dirs,
    recipe_fitness,
)
from activities.store.events import EventStore, open_event_store
from compiler.recipes import load_library, match
from schemas.budget import MODEL_CALLED
from schemas.events import EventDraft
from schemas.recipes import RUN_TAGGED

T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with open_event_store(f"sqlite:///{tmp_path / 'forge.db'}") as s:
        yield s


def seed_run(
    store: EventStore,
    run_id: str,
    *,
    tags: Sequence[str] = (),
    outcome: str | None = "completed",
    seconds: float = 60.0,
    calls: Sequence[tuple[int, int] | None] = (),
    tenant: str = "default",
    start: datetime = T0,
) -> None:
    """What the runner records: started, tagged, model calls, then completed or failed."""
    root = f"{run_id}:{RUN_STARTED}"

    def ev(type_: str, suffix: str, at: datetime, payload: dict[str, object]) -> EventDraft:
        return EventDraft(
            event_id=root if type_ == RUN_STARTED else f"{run_id}:{type_}:{suffix}",
            type=type_,
            tenant_id=tenant,
            run_id=run_id,
            caused_by=None if type_ == RUN_STARTED else root,
            timestamp=at,
            payload=payload,
        )

    drafts = [ev(RUN_STARTED, "", start, {})]
    if tags:
        drafts.append(ev(RUN_TAGGED, "0", start, {"tags": list(tags)}))
    for i, call in enumerate(calls):
        usage = {} if call is None else {"input_tokens": call[0], "output_tokens": call[1]}
        drafts.append(
            ev(MODEL_CALLED, str(i), start + timedelta(seconds=1), {"model": "m", **usage})
        )
    if outcome is not None:
        type_ = RUN_COMPLETED if outcome == "completed" else RUN_FAILED
        drafts.append(ev(type_, "0", start + timedelta(seconds=seconds), {}))
    store.append(drafts, stream_id=f"{run_id}:run")


def test_tagged_runs_give_success_rate_latency_tokens_and_adjustment(store: EventStore) -> None:
    seed_run(store, "r1", tags=["recipe:forge/debug"], seconds=30, calls=[(100, 50), (10, 40)])
    seed_run(store, "r2", tags=["recipe:forge/debug"], seconds=90, calls=[(300, 100)])
    seed_run(store, "r3", tags=["recipe:forge/debug"], outcome="failed", seconds=60, calls=[None])
    table = recipe_fitness(store)
    assert list(table) == ["forge/debug"]
    debug = table["forge/debug"]
    assert (debug.key, debug.runs, debug.successes) == ("forge/debug", 3, 2)
    assert debug.success_rate == pytest.approx(2 / 3)
    assert debug.mean_latency_s == pytest.approx(60.0)
    assert debug.mean_tokens == pytest.approx((200 + 400 + 0) / 3)  # a call without usage is 0
    assert debug.adjustment == pytest.approx(2.0 * (2 / 3 - 0.5) * (3 / 5))


def test_untagged_runs_are_never_counted(store: EventStore) -> None:
    for i in range(4):
        seed_run(store, f"plain-{i}", outcome="failed")  # no run.tagged.v1 at all
    seed_run(store, "other-tags", tags=["team:billing", "recipe:debug", "recipe:/x"])
    seed_run(store, "tagged", tags=["recipe:forge/billing-audit"])
    table = recipe_fitness(store)
    assert list(table) == ["forge/billing-audit"]
    assert (table["forge/billing-audit"].runs, table["forge/billing-audit"].successes) == (1, 1)


def test_a_running_run_is_not_counted_until_it_finishes(store: EventStore) -> None:
    seed_run(store, "busy", tags=["recipe:forge/debug"], outcome=None)
    assert recipe_fitness(store) == {}
    seed_run(store, "done", tags=["recipe:forge/debug"], outcome="failed")
    assert recipe_fitness(store)["forge/debug"].runs == 1


def test_a_run_counts_by_its_last_outcome_and_once_per_tag(store: EventStore) -> None:
    seed_run(store, "r", tags=["recipe:forge/debug", "recipe:forge/debug"], outcome="failed")
    later = EventDraft(
        event_id="r:resumed:completed",
        type=RUN_COMPLETED,
        run_id="r",
        caused_by=f"r:{RUN_STARTED}",
        timestamp=T0 + timedelta(minutes=10),
    )
    store.append([later], stream_id="r:run")
    record = recipe_fitness(store)["forge/debug"]
    assert (record.runs, record.successes, record.mean_latency_s) == (1, 1, 600.0)


def test_two_owners_sharing_a_slug_do_not_cross_pollute(store: EventStore) -> None:
    for i in range(5):
        seed_run(store, f"acme-{i}", tags=["recipe:acme/debug"])
        seed_run(store, f"forge-{i}", tags=["recipe:forge/debug"], outcome="failed")
    table = recipe_fitness(store)
    assert (table["acme/debug"].successes, table["acme/debug"].adjustment) == (5, 1.0)
    assert (table["forge/debug"].successes, table["forge/debug"].adjustment) == (0, -1.0)
    lookup = fitness_lookup(table)
    assert (lookup("acme/debug"), lookup("forge/debug"), lookup("debug")) == (1.0, -1.0, None)


def test_another_owners_record_never_lifts_a_recipe_through_the_bare_slug(
    store: EventStore,
) -> None:
    # The matcher asks for owner/slug, then the bare slug: only acme's runs exist, so a bare-slug
    # answer would credit acme's record to the curated forge/debug.
    for i in range(5):
        seed_run(store, f"acme-{i}", tags=["recipe:acme/debug"])
    library = load_library(STDLIB_DIR / "recipes")
    prompt = "fix this bug: the login page throws a 500 error"
    result = match(prompt, library, fitness=fitness_lookup(recipe_fitness(store)))
    assert result.selected is not None and result.selected.slug == "debug"
    assert result.selected.fitness_adjustment == 0.0
    seed_run(store, "forge-0", tags=["recipe:forge/debug"])
    lifted = match(prompt, library, fitness=fitness_lookup(recipe_fitness(store)))
    assert lifted.selected is not None
    assert lifted.selected.fitness_adjustment == pytest.approx(0.2)  # one run: 2 * 0.5 * 1/5
    assert lifted.selected.score == pytest.approx(result.selected.score + 0.2)


@pytest.mark.parametrize(
    ("successes", "failures", "expected"),
    [
        (5, 0, 1.0),  # all good, full weight: the most a record gives
        (0, 5, -1.0),  # all bad, full weight
        (10, 10, 0.0),  # a coin toss says nothing
        (1, 0, 0.2),  # one good run counts for a fifth
        (0, 2, -0.4),  # two bad runs count for two fifths
        (8, 2, 0.6),  # past five runs the weight stays 1
    ],
)
def test_adjustment_sign_and_weight(
    store: EventStore, successes: int, failures: int, expected: float
) -> None:
    for i in range(successes):
        seed_run(store, f"ok-{i}", tags=["recipe:forge/feature"])
    for i in range(failures):
        seed_run(store, f"bad-{i}", tags=["recipe:forge/feature"], outcome="failed")
    record = recipe_fitness(store)["forge/feature"]
    assert record.runs == successes + failures
    assert record.adjustment == pytest.approx(expected)


def test_tenant_filter(store: EventStore) -> None:
    seed_run(store, "a", tags=["recipe:forge/debug"], tenant="acme")
    seed_run(store, "g", tags=["recipe:forge/debug"], tenant="globex", outcome="failed")
    assert recipe_fitness(store)["forge/debug"].runs == 2
    assert recipe_fitness(store, tenant_id="acme")["forge/debug"].successes == 1
    assert recipe_fitness(store, tenant_id="globex")["forge/debug"].successes == 0
    assert recipe_fitness(store, tenant_id="initech") == {}


def test_more_tagged_runs_than_the_default_list_limit_all_count(store: EventStore) -> None:
    drafts = []
    for i in range(1005):  # list_events returns 1000 by default
        run = f"bulk-{i}"
        root = f"{run}:{RUN_STARTED}"
        drafts += [
            EventDraft(event_id=root, type=RUN_STARTED, run_id=run, timestamp=T0),
            EventDraft(
                event_id=f"{run}:tag",
                type=RUN_TAGGED,
                run_id=run,
                caused_by=root,
                timestamp=T0,
                payload={"tags": ["recipe:forge/data-ingest"]},
            ),
            EventDraft(
                event_id=f"{run}:done",
                type=RUN_COMPLETED,
                run_id=run,
                caused_by=root,
                timestamp=T0 + timedelta(seconds=5),
            ),
        ]
    store.append(drafts, stream_id="bulk")
    record = recipe_fitness(store)["forge/data-ingest"]
    assert (record.runs, record.successes, record.mean_latency_s) == (1005, 1005, 5.0)


def test_library_dirs_in_read_precedence_skipping_missing(tmp_path: Path) -> None:
    with_recipes, without = tmp_path / "pack-a", tmp_path / "pack-b"
    (with_recipes / "recipes").mkdir(parents=True)
    without.mkdir()
    home = tmp_path / "home"
    assert library_dirs([with_recipes, without], home) == [
        STDLIB_DIR / "recipes",
        with_recipes / "recipes",
    ]
    (home / "recipes").mkdir(parents=True)
    assert library_dirs([with_recipes, without], home)[-1] == home / "recipes"
    assert library_dirs([], home) == [STDLIB_DIR / "recipes", home / "recipes"]
