"""Schemathesis against the live API: every operation, the six response checks, one report.

`fuzz(url, token, depth)` loads /openapi.json from the running server and drives schemathesis's
own engine (the one its CLI runs) over every operation as the key's principal, positive and
negative data, then returns what failed, grouped by check and operation, with a curl line to
reproduce each. `QUICK` is the suite's run (`make test`); `DEEP` is `make fuzz`'s.
"""

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from schemathesis.engine import Status, from_schema
from schemathesis.engine.events import (
    EngineFinished,
    FatalError,
    NonFatalError,
    PhaseFinished,
    ScenarioFinished,
)

__all__ = ["CHECKS", "DEEP", "QUICK", "Depth", "FuzzReport", "fuzz"]

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
)


@dataclass(frozen=True)
class Depth:
    """How hard to fuzz: examples per operation and phase, and whether to follow links."""

    max_examples: int
    stateful: bool
    seed: int = 35


QUICK = Depth(max_examples=int(os.environ.get("FORGE_FUZZ_EXAMPLES", "8")), stateful=False)
DEEP = Depth(max_examples=int(os.environ.get("FORGE_FUZZ_EXAMPLES", "150")), stateful=True)


@dataclass
class FuzzReport:
    """What a run covered and every check that failed (check, operation, message, curl)."""

    operations: set[str] = field(default_factory=set)
    cases: int = 0
    seconds: float = 0.0
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    phases: dict[str, str] = field(default_factory=dict)  # phase -> success, failure, skip, ...

    def by_class(self) -> Counter[tuple[str, str]]:
        return Counter((check, title) for check, _, title, _ in self.failures)

    def explain(self) -> str:
        """Each distinct failure once, with the request that shows it."""
        seen: dict[tuple[str, str, str], str] = {}
        for check, op, title, curl in self.failures:
            seen.setdefault((check, op, title), curl)
        lines = [f"{len(self.failures)} failure(s), {len(self.errors)} error(s):"]
        lines += [f"- {c} {op}: {t}\n    {curl}" for (c, op, t), curl in seen.items()]
        lines += [f"- error: {e}" for e in self.errors]
        return "\n".join(lines)


def _config(url: str, token: str, depth: Depth) -> schemathesis.Config:
    checks: dict[str, Any] = {"enabled": False} | {name: {"enabled": True} for name in CHECKS}
    # No example database: the seed alone decides what is sent, so a run repeats exactly.
    generation = {"mode": "all", "max-examples": depth.max_examples, "database": "none"}
    return schemathesis.Config.from_dict(
        {
            "seed": depth.seed,
            "base-url": url,
            "headers": {"Authorization": f"Bearer {token}"},
            "workers": 1,
            "request-timeout": 60,
            "suppress-health-check": ["all"],
            "checks": checks,
            "generation": generation,
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": depth.stateful, "max-steps": 6},
            },
        }
    )


def fuzz(
    url: str,
    token: str,
    depth: Depth,
    *,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
) -> FuzzReport:
    """Fuzz the API at `url` as `token`'s key: every operation, or those `include` names, but
    those in `exclude` (operation ids)."""
    config = _config(url, token, depth)
    # The loader's own read timeout is 10 s: a loaded two-core runner has taken longer.
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config, timeout=60)
    if include:
        schema = schema.include(operation_id=list(include))
    if exclude:
        schema = schema.exclude(operation_id=list(exclude))
    report = FuzzReport()
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, ScenarioFinished):
            _record(report, event)
        elif isinstance(event, PhaseFinished):
            report.phases[event.phase.name.value] = event.status.value
        elif isinstance(event, NonFatalError | FatalError):
            report.errors.append(_error_text(event))
        elif isinstance(event, EngineFinished):
            break
    report.seconds = time.monotonic() - started
    return report


def _record(report: FuzzReport, event: ScenarioFinished) -> None:
    recorder = event.recorder
    for case_id, node in recorder.cases.items():
        report.operations.add(node.value.operation.label)
        if case_id in recorder.interactions:
            report.cases += 1
    for checks in recorder.checks.values():
        for check in checks:
            if check.status == Status.FAILURE and check.failure_info is not None:
                info = check.failure_info
                curl = info.code_sample.replace("\n", " ")
                what = f"{info.failure.title}: {info.failure.message}"[:600]
                report.failures.append((check.name, str(info.failure.operation), what, curl))


def _error_text(event: NonFatalError | FatalError) -> str:
    if isinstance(event, NonFatalError):
        return f"{event.label}: {event.info.message}"
    return repr(event.exception)
