"""Huge field names neither cost nor retain memory in L1.

Regression tests for the ladder review (finding 7).
"""

import gc
import random
import tracemalloc

from compiler.ladder import run_ladder, similarity
from tests.ladder.helpers import contract, entry


def _random_name(length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=length))


def test_a_very_long_undeclared_field_name_is_flagged_without_being_compared(monkeypatch):
    lengths: list[int] = []
    real = similarity.ngram_vector
    monkeypatch.setattr(similarity, "ngram_vector", lambda n: lengths.append(len(n)) or real(n))
    name = _random_name(100_000, 1)
    result = run_ladder(entry(description=...) | {name: 1, "descriptio": "x"}, contract())
    assert lengths and max(lengths) <= 256  # "descriptio" is compared, the long name is not
    [flag] = [f for f in result.findings if f.stage == "L1"]
    assert flag.severity == "warning" and "100000 characters long" in flag.message
    assert result.ok  # L4 strips it as usual


def test_no_payload_field_name_outlives_its_run():
    names = [_random_name(200_000, seed) for seed in range(3)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for name in names:
            run_ladder(entry(description=...) | {name: 1, name[:200]: 2}, contract())
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < 2_000_000, retained
