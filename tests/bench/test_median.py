"""`python -m tests.bench --repeat N` reports the median run of each figure; bad args refused."""

import pytest

from tests.bench.__main__ import _median_runs, main


def figure(name: str, ratio: float) -> dict[str, object]:
    return {"name": name, "ratio_to_baseline": ratio, "figure": f"{ratio}x", "meets_goal": True}


def test_each_figure_is_the_run_with_its_median_ratio():
    runs = [
        [figure("a", 1.5), {"name": "b", "figure": "x", "meets_goal": None}],
        [figure("a", 1.2), {"name": "b", "figure": "y", "meets_goal": None}],
        [figure("a", 1.9), {"name": "b", "figure": "z", "meets_goal": None}],
    ]
    a, b = _median_runs(runs)
    assert a["ratio_to_baseline"] == 1.5 and a["figure"] == "1.5x (median of 3)"
    assert a["repeats"] == {"of": "ratio_to_baseline", "values": [1.5, 1.2, 1.9], "median": 1.5}
    assert b["figure"] == "z"  # no ratio to take a median of: the last run's


def test_a_count_keeps_its_worst_repeat():
    runs = [
        [{"name": "r", "requests": n, "figure": f"{n} requests", "meets_goal": n == 0}]
        for n in (0, 2, 0)
    ]
    [worst] = _median_runs(runs)
    assert worst["requests"] == 2 and not worst["meets_goal"]
    assert worst["figure"] == "2 requests (most of 3)"
    assert worst["repeats"] == {"of": "requests", "values": [0, 2, 0]}


def test_unknown_benchmarks_and_bad_repeats_are_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["harnes"])
    assert exc.value.code == 2
    assert "unknown benchmark(s) harnes; known: compile" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["harness", "--repeat", "0"])
    assert "--repeat needs a whole number of 1 or more" in capsys.readouterr().err
