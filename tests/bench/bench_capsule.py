"""Capsules: sealed replay against its source run; capsule submission against plain submission.

`capsule.sealed_replay` and `capsule.sealed_model_requests`: on one Temporal dev server, with the
real `anthropic` SDK against the local Messages server (tests/workflows/model_env), an objective
run plans two model-coded steps (the planner, then the executor: two turns for `totals`, the
first failing, one for `summary`; the compile passes' resolvers may ask too and are told "no
change"). The first such run is a warm-up and the capsule's source (extracted once); then
SOURCE_RUNS fresh objective runs and as many sealed capsule runs are timed interleaved,
alternating which goes first, each on new sales data of the same size (ROWS rows).
Each is timed from submission (upload, or prepare_capsule_run) to the run's result. The figure is
median(sealed) / median(source). The local server answers at once, so the source runs here pay
no model latency at all: with a real model the ratio would only be smaller. The second figure
counts the Messages-server requests made while the sealed runs (the warm-up one included) ran.

`capsule.submission_overhead`: the billing-audit frozen plan runs once and is extracted; then
`prepare_capsule_run` (capsule lookup, plan template read and seal check, input locations, each
input parsed and its columns checked against what the source run read, uploads, RunInput) is
timed against the plain `forge run PLAN.json` path for the same plan and inputs
(`runs.check_plan` — parse and compile — then `runs.prepare_plan_run` — uploads, RunInput),
SUBMISSIONS times each, interleaved, each submission on freshly generated data of its own so
neither side finds its uploads already stored. The compile context (type library, profiles) is
built once beforehand, which favours the plain path: the CLI builds it on every `forge run`; its
cost is reported alongside. Nothing is started on Temporal for these submissions.
"""

import asyncio
import json
import random
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from activities.capsules.prepare_run import prepare_capsule_run
from activities.compile.typelib import load_library, load_profiles
from compiler.plan.context import CompileContext
from schemas.run import RunResult
from schemas.tenant_settings import TenantSettings
from tests.temporal_env import temporal_test_env
from tests.workflows.engine import BILLING, Engine, billing_plan, engine
from tests.workflows.model_env import executor, model_engine, run_python, text
from tests.workflows.test_capsules import (
    FIRST_TRY,
    PLAN,
    SCOPE,
    SUMMARY,
    TOTALS,
    billing_data,
    run_capsule,
    services,
)
from tests.workflows.test_model_runs import OBJECTIVE
from workers.services import runs
from workers.services.capsule_runs import input_policy
from workers.services.capsules import extract_run

SOURCE_RUNS = 5  # timed source runs, and as many timed sealed runs
ROWS = 400  # rows of every sales table, source and sealed alike
SUBMISSIONS = 20
GOAL_REPLAY = 1.2
GOAL_REQUESTS = 0
# A capsule submission does work the plain one does not (it reads the plan template and checks
# its seal, parses every input and checks its columns against the source run's) and skips the
# one the plain one must do (compiling the plan): it should cost at most half as much again.
GOAL_SUBMISSION = 1.5
REGIONS = ("north", "south", "east", "west", "central", "islands")

# Every run asks the same: the planner for PLAN, the executor for `totals` (FIRST_TRY fails on a
# wrong column, TOTALS follows up on its KeyError) and for `summary`. Unlimited uses, so every
# source run is planned and coded afresh; the more specific `totals` answer comes first.
SCRIPT = [
    {
        "when": {"consumer": "planner"},
        "times": 0,
        "response": text(json.dumps(PLAN), thinking=True),
    },
    {
        "when": {"consumer": "executor", "contains": "Step totals:", "last_contains": "KeyError"},
        "times": 0,
        "response": run_python(TOTALS),
    },
    executor("totals", run_python(FIRST_TRY), times=0),
    executor("summary", run_python(SUMMARY), times=0),
]
MODEL_TURNS = 4  # per source run: the planner, two executor turns for totals, one for summary
RECORDED = {"totals": 2, "summary": 1}  # the programs the capsule replays, per step


def sales_table(path: Path, seed: int, rows: int = ROWS) -> Path:
    rng = random.Random(seed)
    lines = [f"{rng.choice(REGIONS)},{rng.uniform(1, 5000):.2f}" for _ in range(rows)]
    path.write_text("region,amount\n" + "\n".join(lines) + "\n")
    return path


def expected_totals(path: Path) -> list[str]:
    totals: dict[str, float] = {}
    for line in path.read_text().splitlines()[1:]:
        region, amount = line.split(",")
        totals[region] = totals.get(region, 0.0) + float(amount)
    return ["region,revenue"] + [f"{r},{totals[r]:.2f}" for r in sorted(totals)]


def _completed(result: RunResult, what: str) -> RunResult:
    if result.status != "completed":
        raise RuntimeError(f"{what} {result.run_id} ended {result.status}: {result}")
    return result


async def _timed(fn: Callable[[], Awaitable[RunResult]]) -> tuple[float, RunResult]:
    start = time.perf_counter()
    result = await fn()
    return (time.perf_counter() - start) * 1000, result


async def _replay(env: Any, root: Path) -> dict[str, Any]:
    data = root / "sales"
    data.mkdir()
    seeds = iter(range(1_000))
    async with model_engine(env, root / "home", f"bench-{uuid.uuid4()}", SCRIPT) as (eng, server):

        async def source() -> RunResult:
            seed = next(seeds)
            sales = sales_table(data / f"source-{seed}.csv", seed)
            ref = eng.services.artifacts.put_file(SCOPE, sales, logical_path="input/sales.csv")
            before = server.request_count
            handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
            result = _completed(await handle.result(), "source run")
            if server.request_count - before < MODEL_TURNS:  # planned and coded, not reused
                raise RuntimeError(f"source run asked only {server.request_count - before}")
            return result

        async def sealed() -> RunResult:
            seed = next(seeds)
            sales = sales_table(data / f"sealed-{seed}.csv", seed)
            before = server.request_count
            _, result = await run_capsule(eng, "revenue", {"sales": sales}, (root,))
            sealed_requests.append(server.request_count - before)
            _completed(result, "sealed run")
            if result.budget.spent.model_calls:
                raise RuntimeError(f"not a sealed replay: {result}")
            got = _text(eng, result, "output/totals.csv").splitlines()
            if got != expected_totals(sales):  # the recorded code ran on the new data
                raise RuntimeError(f"sealed run {result.run_id} totals differ: {got[:3]}")
            return result

        source_ms: list[float] = []
        sealed_ms: list[float] = []
        sealed_requests: list[int] = []
        paid_before = server.request_count
        first = await source()  # warm-up, and the capsule's source
        asked = [h.get("x-forge-consumer", "?") for h in server.headers[paid_before:]]
        version = extract_run(services(eng), SCOPE, first.run_id, "revenue")
        cells = {p.step_key: len(p.cells) for p in version.content.programs}
        if cells != RECORDED:
            raise RuntimeError(f"the capsule recorded {cells}, not {RECORDED}")
        await sealed()  # warm-up
        for i in range(SOURCE_RUNS):
            # Interleaved, alternating which goes first, so both share the machine's noise.
            pair = (source, sealed) if i % 2 == 0 else (sealed, source)
            for fn in pair:
                ms, _ = await _timed(fn)
                (source_ms if fn is source else sealed_ms).append(ms)
    return {
        "source_ms": source_ms,
        "sealed_ms": sealed_ms,
        "sealed_requests": sealed_requests,
        "source_requests": dict(sorted(Counter(asked).items())),
    }


def _text(eng: Engine, result: RunResult, path: str) -> str:
    [ref] = [r for r in result.outputs if r.path == path]
    return eng.services.artifacts.read_bytes(SCOPE, ref.sha256, 50_000_000).decode()


def _context(eng: Engine) -> CompileContext:
    """What workers.cli.common.compile_context builds for `forge run` with no --profile."""
    s = eng.settings
    library = load_library(s.packs_path)
    layers, ref = load_profiles(s.packs_path, home=s.home, run_profile=None)
    return CompileContext(library=library, profiles=layers, profile_ref=ref)


async def _submission(env: Any, root: Path) -> dict[str, Any]:
    async with engine(env, root / "home", f"bench-{uuid.uuid4()}") as eng:
        source = _completed(await eng.run(billing_plan(), billing_data(root, 2)), "billing run")
        extract_run(services(eng), SCOPE, source.run_id, "billing")
        settings = eng.settings.model_copy(update={"input_roots": (root,)})
        store = eng.services.artifacts
        document = billing_plan()
        context_ms = []
        for _ in range(5):
            start = time.perf_counter()
            ctx = _context(eng)
            context_ms.append((time.perf_counter() - start) * 1000)

        def capsule(inputs: dict[str, Path]) -> None:
            prepare_capsule_run(
                eng.services.capsules,
                store,
                input_policy(settings, TenantSettings(tenant_id=SCOPE.tenant)),
                SCOPE,
                "billing",
                run_id=runs.new_run_id(SCOPE.tenant),
                inputs={k: str(v) for k, v in inputs.items()},
                params={},
            )

        def plain(inputs: dict[str, Path]) -> None:
            checked = runs.check_plan(document, ctx)
            runs.prepare_plan_run(checked, "frozen-plan.json", inputs, store, scope=SCOPE)

        capsule(billing_data(root, 3))  # warm-up: imports, caches, the page cache
        plain(billing_data(root, 4))
        capsule_ms: list[float] = []
        plain_ms: list[float] = []
        for i in range(SUBMISSIONS):
            own = {capsule: billing_data(root, 100 + 2 * i), plain: billing_data(root, 101 + 2 * i)}
            for fn in (capsule, plain) if i % 2 == 0 else (plain, capsule):
                start = time.perf_counter()
                fn(own[fn])
                (capsule_ms if fn is capsule else plain_ms).append(
                    (time.perf_counter() - start) * 1000
                )
        input_bytes = sum(p.stat().st_size for p in billing_data(root, 5).values())
    return {
        "capsule_ms": capsule_ms,
        "plain_ms": plain_ms,
        "context_ms": context_ms,
        "steps": len(document["steps"]),
        "input_bytes": input_bytes,
    }


async def _measure(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    async with temporal_test_env() as env:
        replay = await _replay(env, root / "replay")
        submission = await _submission(env, root / "submission")
    return replay, submission


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10, method="inclusive")[8]


def _ms(samples: list[float]) -> list[float]:
    return [round(s, 1) for s in samples]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-capsule-") as tmp:
        root = Path(tmp)
        for part in ("replay", "submission"):
            (root / part).mkdir()
        replay, sub = asyncio.run(_measure(root))
    sealed, source = statistics.median(replay["sealed_ms"]), statistics.median(replay["source_ms"])
    ratio = sealed / source
    requests = sum(replay["sealed_requests"])
    n_sealed = len(replay["sealed_requests"])
    by_consumer = replay["source_requests"]
    per_source = sum(by_consumer.values())
    ours, base = statistics.median(sub["capsule_ms"]), statistics.median(sub["plain_ms"])
    sub_ratio = ours / base
    context = statistics.median(sub["context_ms"])
    return [
        {
            "name": "capsule.sealed_replay",
            "runs": SOURCE_RUNS,
            "rows": ROWS,
            "ms_p50": round(sealed, 1),
            "ms_runs": _ms(replay["sealed_ms"]),
            "baseline": "the source run: objective, recipe match, planner, compile, executor "
            "sessions (local Messages server, instant answers), same data size, interleaved",
            "baseline_ms_p50": round(source, 1),
            "baseline_ms_runs": _ms(replay["source_ms"]),
            "ratio_to_baseline": round(ratio, 3),
            "goal_ratio": GOAL_REPLAY,
            "meets_goal": ratio <= GOAL_REPLAY,
            "figure": f"p50 {sealed:.0f} ms sealed capsule run (2 model-coded steps, 3 recorded "
            f"programs, {ROWS} rows, n={SOURCE_RUNS})",
            "versus": f"{ratio:.2f}× the source run (p50 {source:.0f} ms: planner, compile, "
            f"{per_source} model requests)",
            "goal": f"≤ {GOAL_REPLAY}×",
        },
        {
            "name": "capsule.sealed_model_requests",
            "requests": requests,
            "sealed_runs": n_sealed,
            "requests_per_sealed_run": replay["sealed_requests"],
            "baseline": "the source run's Messages-server requests",
            "baseline_requests_per_run": per_source,
            "baseline_requests_by_consumer": by_consumer,
            "goal_requests": GOAL_REQUESTS,
            "meets_goal": requests == GOAL_REQUESTS,
            "figure": f"{requests} model requests in {n_sealed} sealed runs",
            "versus": f"{per_source} per source run ("
            + ", ".join(f"{c} {n}" for c, n in by_consumer.items())
            + ")",
            "goal": f"{GOAL_REQUESTS}",
        },
        {
            "name": "capsule.submission_overhead",
            "runs": SUBMISSIONS,
            "plan": str(BILLING.relative_to(BILLING.parents[1]) / "frozen-plan.json"),
            "plan_steps": sub["steps"],
            "input_bytes": sub["input_bytes"],
            "ms_p50": round(ours, 2),
            "ms_p90": round(_p90(sub["capsule_ms"]), 2),
            "baseline": "runs.check_plan + runs.prepare_plan_run (what `forge run PLAN.json` "
            "does before starting), same plan, same-size inputs, interleaved; compile context "
            "built once",
            "baseline_ms_p50": round(base, 2),
            "baseline_ms_p90": round(_p90(sub["plain_ms"]), 2),
            "compile_context_ms_p50": round(context, 2),
            "ratio_to_baseline": round(sub_ratio, 3),
            "goal_ratio": GOAL_SUBMISSION,
            "meets_goal": sub_ratio <= GOAL_SUBMISSION,
            "figure": f"p50 {ours:.1f} ms prepare_capsule_run (billing-audit, 3 inputs, "
            f"n={SUBMISSIONS})",
            "versus": f"{sub_ratio:.2f}× a plain plan submission (p50 {base:.1f} ms; the CLI "
            f"also builds its compile context, p50 {context:.1f} ms)",
            "goal": f"≤ {GOAL_SUBMISSION}×",
        },
    ]
