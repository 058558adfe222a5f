"""Sizing a worker's concurrency: the scale bench with FORGE_WORKER_* variants beside it.

The same workloads, rounds and baseline as bench_scale (1, 2 and 4 workers, side by side,
alternating), plus 4-worker topologies with other settings, measured in the same rounds:

- 4 workers of 2 activity slots each hold as many activities at once as 1 worker of the
  default 8 on 2 cores: whether 4×8 slots oversubscribe the cores;
- 4 workers with FORGE_WORKER_TARGET_CPU=0.9: Temporal's resource-based tuner holding slots
  back while the host is busy;
- 1 worker of 16 activity slots: as many slots as 2 workers of the default 8.

Only the 4-worker default row carries the goal, as in bench_scale. Six topologies take about
twice bench_scale's time, so `make bench` runs it only when named: `make bench
BENCH=scale_sizing`.
"""

from __future__ import annotations

from typing import Any

from tests.bench import bench_scale
from tests.bench.report import run_alone

CONFIGURATIONS: bench_scale.Configurations = {
    **bench_scale.CONFIGURATIONS,
    "workers_4_slots_2": (4, {"FORGE_WORKER_ACTIVITY_SLOTS": "2"}),
    "workers_4_target_cpu_0.9": (4, {"FORGE_WORKER_TARGET_CPU": "0.9"}),
    "workers_1_slots_16": (1, {"FORGE_WORKER_ACTIVITY_SLOTS": "16"}),
}


def run() -> list[dict[str, Any]]:
    found = bench_scale.measure(CONFIGURATIONS)
    return bench_scale.figures(found, CONFIGURATIONS, prefix="scale_sizing")


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
