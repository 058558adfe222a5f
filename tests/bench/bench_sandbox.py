"""Sandbox start: `run_sandboxed` (bwrap, default limits) against the bare interpreter."""

import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from activities.compile.typelib import load_profiles
from activities.sandbox.runner import SandboxLimits, run_sandboxed
from activities.sandbox.step_runtime import RUNTIME_DIR

N = 30
GOAL_RATIO = 1.6
WRITE_CODE = "open('/workspace/output/out.json', 'w').write('{}')"
# (name, label, code the sandbox runs, the same code for the bare interpreter in its cwd)
CASES = (
    ("sandbox.start_pass", "python -c pass", "pass", "pass"),
    (
        "sandbox.start_write_file",
        "python -c <write output/out.json>",
        WRITE_CODE,
        WRITE_CODE.replace("/workspace/", ""),
    ),
)


def default_limits() -> SandboxLimits:
    """The limits of the built-in default execution profile."""
    layers, _ = load_profiles()
    return SandboxLimits.from_policy(layers.builtin["default"].sandbox)


def _ms(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10, method="inclusive")[8]


def _case(limits: SandboxLimits, root: Path, code: str, bare_code: str) -> dict[str, Any]:
    workspace = root / "sandboxed"
    bare_cwd = root / "bare"
    (bare_cwd / "output").mkdir(parents=True)

    def sandboxed() -> None:
        result = run_sandboxed(
            ["python", "-c", code], workspace=workspace, limits=limits, isolation="bwrap"
        )
        if result.exit_code != 0:
            raise RuntimeError(f"sandboxed run failed: {result.exit_code} {result.stderr[-500:]}")

    def bare() -> None:
        # The same interpreter step code gets (the sealed runtime's), minus the sandbox.
        subprocess.run(
            [str(RUNTIME_DIR / "bin" / "python"), "-c", bare_code], cwd=bare_cwd, check=True
        )

    sandboxed()  # warm-up: page cache, the sandbox user, the stage directory
    bare()
    ours: list[float] = []
    base: list[float] = []
    for i in range(N):
        # Interleaved, alternating which goes first, so both sides share the machine's noise.
        if i % 2:
            ours.append(_ms(sandboxed))
            base.append(_ms(bare))
        else:
            base.append(_ms(bare))
            ours.append(_ms(sandboxed))
    return {"ours": ours, "base": base}


def run() -> list[dict[str, Any]]:
    limits = default_limits()
    results: list[dict[str, Any]] = []
    for name, label, code, bare_code in CASES:
        with tempfile.TemporaryDirectory(prefix="forge-bench-sandbox-") as tmp:
            samples = _case(limits, Path(tmp), code, bare_code)
        p50, p90 = statistics.median(samples["ours"]), _p90(samples["ours"])
        b50, b90 = statistics.median(samples["base"]), _p90(samples["base"])
        ratio = p50 / b50
        results.append(
            {
                "name": name,
                "runs": N,
                "command": label,
                "isolation": "bwrap",
                "ms_p50": round(p50, 2),
                "ms_p90": round(p90, 2),
                "baseline": "the runtime's python -c, same code, no sandbox, interleaved",
                "baseline_ms_p50": round(b50, 2),
                "baseline_ms_p90": round(b90, 2),
                "ratio_to_baseline": round(ratio, 3),
                "goal_ratio": GOAL_RATIO,
                "meets_goal": ratio <= GOAL_RATIO,
                "figure": f"p50 {p50:.1f} ms, p90 {p90:.1f} ms ({label}, n={N})",
                "versus": f"{ratio:.2f}× bare python (p50 {b50:.1f} ms, p90 {b90:.1f} ms)",
                "goal": f"p50 ≤ {GOAL_RATIO}×",
            }
        )
    return results
