"""A model's program is scanned for credentials before it runs: refused whole, never edited.

The gateway masks a model's answer where it is recorded; the Code-Act loop gets the program as
the model wrote it. Masking a program would change what it does (a false positive turns a
format string into `[REDACTED:…]`) and running a real credential would put it in the sandbox,
its outputs and its logs. So a program in which the boundary's masker finds a credential does
not run: the model is told which detector fired on which line, never the value, and that a
credential reaches step code only through the tool bridge.
"""

from collections import Counter
from functools import cache

from compiler.ladder.scan import Detectors
from compiler.ladder.secrets.mask import BOUNDARY_DETECTORS, mask_text

__all__ = ["credential_problem"]


@cache
def _detectors() -> Detectors:
    # The detectors mask_text searches a text with (no field name): here for where they hit.
    return Detectors(BOUNDARY_DETECTORS)


def credential_problem(code: str) -> tuple[str, str] | None:
    """Why `code` may not run and the program as it may be recorded (masked); None if it may.

    The reason names each credential's detector and line, never its value.
    """
    recorded, found = mask_text(code)
    if not found:
        return None
    lines: dict[int, Counter[str]] = {}
    for start, _end, kind in _detectors().text(code):
        lines.setdefault(code.count("\n", 0, start) + 1, Counter())[kind] += 1
    where = "; ".join(
        f"line {line}: " + ", ".join(k if n == 1 else f"{k} (x{n})" for k, n in kinds.items())
        for line, kinds in sorted(lines.items())
    )
    problem = (
        f"program not run: it holds {len(found)} credential(s) "
        f"({where or ', '.join(f.detector for f in found)}); no value is repeated here. A "
        "credential must never be written into a program: reach the service through a governed "
        "tool (`forge_bridge.call(tool_id, args)`), which holds the credentials the step is "
        "given, and send the program again without it"
    )
    return problem, recorded
