"""Process-wide runtime tuning for Forge entry points (CLI, worker, benchmarks)."""

import gc

# Compiling a large plan allocates hundreds of thousands of small, long-lived pydantic objects;
# with CPython's default thresholds full collections run again and again over them for no
# garbage (cycles are rare here). A higher first threshold, as mypy uses for the same reason,
# keeps collection cost proportional to the work.
GC_THRESHOLDS = (200_000, 30, 30)


def tune_gc() -> None:
    """Apply Forge's GC thresholds to this process."""
    gc.set_threshold(*GC_THRESHOLDS)
