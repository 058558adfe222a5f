"""The deterministic ladder on 50-field payloads against jsonschema validation alone.

Both sides see the same 200 payloads in the same run. The ladder runs every stage that
needs no model (L3 guard, L0, L0b, L0c, L0d, L0e, L1 with the n-gram backend, L4, L5)
against a contract with synonyms, defaults, transforms and JsonLogic rules; the baseline is
`Draft202012Validator(schema).iter_errors` on each payload, exhausted. Two payload sets:
"typical" (each payload has a few things to repair: two aliases, a US date, an upper-case
enum, a misspelt field, a missing default, one undeclared key) and "clean" (nothing to do).

Run on its own with `python -m tests.bench.bench_ladder` (prints the figures and merges them
into bench-results.json); `run()` has the shape `tests/bench/__main__.py` collects.
"""

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from compiler.ladder import (
    CaseTransform,
    DateTransform,
    DomainRule,
    EnumCaseTransform,
    LadderContract,
    ScaleTransform,
    run_ladder,
)
from tests.bench.report import run_alone

FIELDS = 50
PAYLOADS = 200
REPEATS = 7
GOAL_RATIO = 5.0
DETERMINISTIC = ("L3", "L0", "L0b", "L0c", "L0d", "L0e", "L1", "L4", "L5")
_KINDS = ("name", "date", "enum", "amount", "count", "flag", "code", "text")
_WORDS = ("alpha", "bravo", "delta", "harbor", "summit", "quartz", "meadow", "cobalt")


def _field(i: int) -> tuple[str, str]:
    kind = _KINDS[i % len(_KINDS)]
    return f"{kind}_{_WORDS[i % 7]}_{i}", kind


def _schema() -> dict[str, Any]:
    props: dict[str, Any] = {}
    for i in range(FIELDS):
        name, kind = _field(i)
        props[name] = {
            "name": {"type": "string", "minLength": 1},
            "date": {"type": "string", "format": "date"},
            "enum": {"type": "string", "enum": ["open", "closed", "pending"]},
            "amount": {"type": "number", "minimum": 0},
            "count": {"type": "integer", "minimum": 0, "maximum": 10_000},
            "flag": {"type": "boolean"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "text": {"type": "string", "maxLength": 500},
        }[kind]
    return {
        "type": "object",
        "properties": props,
        "required": list(props)[:20],
        "additionalProperties": False,
    }


def _contract(schema: dict[str, Any]) -> LadderContract:
    names = list(schema["properties"])
    by_kind: dict[str, list[str]] = {}
    for n in names:
        by_kind.setdefault(n.split("_")[0], []).append(n)
    rules = [
        DomainRule(
            rule_id=f"range-{n}",
            logic={"<=": [0, {"var": n}, 1_000_000]},
            message="out of range",
            requires=(n,),
        )
        for n in by_kind["amount"][:3]
    ] + [
        DomainRule(
            rule_id="dates-ordered",
            logic={"<=": [{"var": by_kind["date"][0]}, {"var": by_kind["date"][1]}]},
            message="dates out of order",
            requires=tuple(by_kind["date"][:2]),
        ),
        DomainRule(
            rule_id="count-cap",
            logic={"<": [{"var": by_kind["count"][0]}, 5000]},
            message="count over cap",
            requires=(by_kind["count"][0],),
        ),
    ]
    return LadderContract(
        json_schema=schema,
        synonyms={f"alias_{i}": names[i] for i in range(0, FIELDS, 5)},
        defaults={f"/{n}": False for n in by_kind["flag"][3:6]},  # optional flags
        transforms=[CaseTransform(path=f"/{n}") for n in by_kind["name"][:3]]
        + [DateTransform(path=f"/{n}") for n in by_kind["date"][:4]]
        + [EnumCaseTransform(path=f"/{n}") for n in by_kind["enum"][:4]]
        + [ScaleTransform(path=f"/{by_kind['amount'][0]}", units={"k": 1000})],
        rules=rules,
    )


def _value(kind: str, rng: random.Random) -> Any:
    if kind == "name":
        return f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS).title()}"
    if kind == "date":
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "enum":
        return rng.choice(["open", "closed", "pending"])
    if kind == "amount":
        return round(rng.uniform(0, 5000), 2)
    if kind == "count":
        return rng.randint(0, 4000)
    if kind == "flag":
        return rng.random() < 0.5
    if kind == "code":
        return f"ABC-{rng.randint(1000, 9999)}"
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))


def payloads(messy: bool, seed: int = 7) -> list[dict[str, Any]]:
    """Deterministic 50-field payloads; `messy` ones carry a few repairable mistakes."""
    rng = random.Random(seed)
    out = []
    names = [_field(i) for i in range(FIELDS)]
    for _ in range(PAYLOADS):
        row = {name: _value(kind, rng) for name, kind in names}
        first, second = [n for n, k in names if k == "date"][:2]
        row[first], row[second] = sorted((row[first], row[second]))  # the "ordered" rule holds
        if messy:
            for i in (5, 10):  # two aliases (L0b)
                row[f"alias_{i}"] = row.pop(names[i][0])
            date = names[1][0]
            y, m, d = row[date].split("-")
            row[date] = f"{m}/{d}/{y}"  # a US date (L0e)
            row[names[2][0]] = row[names[2][0]].upper()  # an upper-case enum (L0e)
            row[names[7][0] + "x"] = row.pop(names[7][0])  # a misspelt field (L1)
            row.pop(names[45][0])  # a missing optional flag that has a default (L0d)
            row["debug_trace"] = "strip me"  # an undeclared key (L4)
        out.append(row)
    return out


def _median_ms(fn: Callable[[], Any]) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _measure(
    label: str,
    rows: list[dict[str, Any]],
    contract: LadderContract,
    validator: Draft202012Validator,
) -> dict[str, Any]:
    results = [run_ladder(r, contract, stages=DETERMINISTIC) for r in rows]
    corrections = sum(len(r.corrections) for r in results)
    assert all(r.ok for r in results), [r.findings for r in results if not r.ok][:1]

    def ladder() -> None:
        for r in rows:
            run_ladder(r, contract, stages=DETERMINISTIC)

    def baseline() -> None:
        for r in rows:
            for _ in validator.iter_errors(r):
                pass

    ladder_ms, baseline_ms = _median_ms(ladder), _median_ms(baseline)
    ratio = ladder_ms / baseline_ms
    per = ladder_ms * 1000 / len(rows)
    return {
        "name": f"ladder.deterministic_50_fields.{label}",
        "payloads": len(rows),
        "fields": FIELDS,
        "corrections_per_payload": round(corrections / len(rows), 2),
        "ms": round(ladder_ms, 2),
        "us_per_payload": round(per, 1),
        "baseline": "jsonschema Draft202012Validator.iter_errors, same payloads",
        "baseline_ms": round(baseline_ms, 2),
        "ratio_to_baseline": round(ratio, 2),
        "goal_ratio": GOAL_RATIO,
        "meets_goal": ratio <= GOAL_RATIO,
        "figure": f"{per:.0f} µs/payload ({corrections / len(rows):.1f} corrections each)",
        "versus": f"{ratio:.2f}× jsonschema ({baseline_ms * 1000 / len(rows):.0f} µs/payload)",
        "goal": f"≤ {GOAL_RATIO:.0f}×",
    }


def run() -> list[dict[str, Any]]:
    schema = _schema()
    contract = _contract(schema)
    validator = Draft202012Validator(schema)
    return [
        _measure("typical", payloads(messy=True), contract, validator),
        _measure("clean", payloads(messy=False), contract, validator),
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
