"""What tenant isolation (issue 20) adds to the hot paths, each against work the path already does.

- The worker's tenant guard walks every activity's input for the tenants it names: measured on
  a batch of 20 events (`events__append`, the activity a run calls most, with a scope per
  event), against decoding that same input from its payload (with the pydantic converter
  ForgePlugin sets), which the worker does anyway.
- Admission under a quota is two write transactions per run (admit at start, end with the
  terminal event): measured against appending one event to the same SQLite database (a run
  appends dozens).

No goal is set: these are figures to watch, not promises. Run on its own with
`python -m tests.bench.bench_tenancy`.
"""

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.contrib.pydantic import pydantic_data_converter

from activities.store.admissions import open_admissions
from activities.store.events import open_event_store
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.events import EventDraft
from schemas.run import AppendEventsInput
from schemas.scope import Scope
from tests.bench.bench_ladder import _median_ms
from tests.bench.report import run_alone
from workers.process.tenant_guard import named_tenants

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
BATCH = 20
RUNS = 50  # admissions (or event appends) per timed call


def _batch(scope: Scope) -> AppendEventsInput:
    drafts = [
        EventDraft(
            event_id=f"run-1:step:{i}",
            type="step.completed.v1",
            scope=scope,
            run_id="run-1",
            caused_by="run-1:start",
            timestamp=NOW,
            payload={"step_key": f"step-{i}", "outputs": [f"output/{i}.json"], "attempt": 1},
        )
        for i in range(BATCH)
    ]
    return AppendEventsInput(stream_id="run:run-1", events=drafts)


def _guard() -> dict[str, Any]:
    inp = _batch(Scope.of_tenant("acme"))
    converter = pydantic_data_converter.payload_converter  # as ForgePlugin configures
    [payload] = converter.to_payloads([inp])

    def walk() -> None:
        assert all(t == "acme" for t in named_tenants([inp]))

    def decode() -> None:
        converter.from_payloads([payload], [AppendEventsInput])

    walk_ms, decode_ms = _median_ms(walk), _median_ms(decode)
    ratio = walk_ms / decode_ms
    return {
        "name": "tenancy.guard.events_append",
        "events": BATCH,
        "ms": round(walk_ms, 4),
        "baseline": "decoding the same activity input from its payload",
        "baseline_ms": round(decode_ms, 4),
        "ratio_to_baseline": round(ratio, 2),
        "meets_goal": None,
        "figure": f"{walk_ms * 1000:.0f} µs per {BATCH}-event input",
        "versus": f"{ratio:.2f}× decoding it ({decode_ms * 1000:.0f} µs)",
        "goal": "none",
    }


def _admission(home: Path) -> dict[str, Any]:
    url = f"sqlite:///{home / 'forge.db'}"
    with open_tenant_settings(url) as settings:
        change = SettingsChange(max_concurrent_runs=RUNS * 1000, max_tokens_per_day=10**12)
        settings.update("acme", change, actor="bench")
    scope = Scope.of_tenant("acme")
    counter = iter(range(10**9))
    with open_admissions(url) as admissions, open_event_store(url) as events:

        def admit_and_end() -> None:
            for _ in range(RUNS):
                run_id = f"run-a{next(counter)}"
                admissions.admit("acme", run_id, 1_000, NOW)
                admissions.end("acme", run_id, NOW)

        def append() -> None:
            for _ in range(RUNS):
                n = next(counter)
                draft = EventDraft(event_id=f"e{n}", type="run.started.v1", scope=scope,
                                   run_id=f"run-e{n}", timestamp=NOW)  # fmt: skip
                events.append([draft], stream_id=f"run:run-e{n}")

        quota_ms, append_ms = _median_ms(admit_and_end) / RUNS, _median_ms(append) / RUNS
    ratio = quota_ms / append_ms
    return {
        "name": "tenancy.admission.sqlite",
        "runs": RUNS,
        "ms": round(quota_ms, 3),
        "baseline": "appending one event to the same database",
        "baseline_ms": round(append_ms, 3),
        "ratio_to_baseline": round(ratio, 2),
        "meets_goal": None,
        "figure": f"{quota_ms:.2f} ms per run (admit + end)",
        "versus": f"{ratio:.2f}× one event append ({append_ms:.2f} ms)",
        "goal": "none",
    }


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-tenancy-") as tmp:
        return [_guard(), _admission(Path(tmp))]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
