"""Ceilings for tests that feed adversarial input to code that must stay linear.

Tests assert behaviour, never wall-clock time: how fast these paths run is measured by
`make bench`, against a baseline taken in the same run. A test here only has to end. A
pathological path (quadratic, backtracking, exponential) on the inputs these tests build runs
for hours, so a generous per-test ceiling still catches it, on a loaded machine too.
"""

SLOW_INPUT_TIMEOUT_S = 120
