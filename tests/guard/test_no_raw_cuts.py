"""No text is cut on its way out before it is masked (issue 33 §2).

A secret cut before masking can lose what identifies it (a PEM's BEGIN line, a token's prefix)
and keep its body: every cut of a text bound for storage, a log, an event, a failure or a
prompt goes through `masked_output.clipped` (mask, then cut). This test reads the code that
writes such text and fails on a slice with a fixed bound (`x[:N]`, `x[-N:]`) of anything that
looks like text; the cuts that are not on a way out are listed with why.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("activities", "workers", "workflows")
# Runs under the system python or inside the sandbox: no masker there, and nothing it cuts
# is written by Forge (uv's own stderr; the step's side of the bridge).
NOT_FORGE_SIDE = ("activities/sandbox/step_runtime.py", "activities/sandbox/client/")
TEXTY = (
    "stdout",
    "stderr",
    "message",
    "text",
    "reason",
    "note",
    "body",
    "code",
    "said",
    "summary",
    "detail",
    "answer",
    "output",
    "error",
    "exc",
    "raw",
    "data",
    "tail",
)
# (file, the sliced expression): why the cut is not on a way out.
ALLOWED = {
    ("activities/sandbox/runner.py", "outcome.stderr"): "read for the OOM/file-size markers only",
    ("activities/harness/evaluator.py", "data"): "bytes decoded for clipped(), with room to spare",
    ("activities/harness/evaluator.py", "body"): "the JSON object found in an answer, whole",
    ("activities/harness/receipt_parse.py", "tail"): "a Parquet footer's bytes, parsed",
    ("activities/capsules/prepare_run.py", "raw"): "a Windows drive letter test",
    ("activities/compile/planner.py", "messages"): "a list: the first message kept",
    ("activities/compile/planner.py", "reasons"): "a list of reasons, each masked as written",
    ("activities/compile/resolvers.py", "c.reasons"): "a list of reasons",
    ("workers/api/problems.py", "errors"): "a list of validation errors, masked as a whole",
    ("activities/sandbox/bridge_wire.py", "str(exc)"): "a JSON decoder's message: no input",
    ("workers/cli/artifacts.py", "summary['columns']"): "a list; receipts are masked when built",
}


def _bound(node: ast.expr | None) -> bool:
    """A fixed bound: a number (or its negative) or an ALL_CAPS constant."""
    if node is None:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.BinOp):
        return _bound(node.left) or _bound(node.right)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    return isinstance(node, ast.Name) and node.id.isupper()


def raw_cuts(root: Path = ROOT) -> list[tuple[str, int, str]]:
    found = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(NOT_FORGE_SIDE) or "/migrations/" in rel:
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)):
                    continue
                if not (_bound(node.slice.lower) or _bound(node.slice.upper)):
                    continue
                sliced = ast.unparse(node.value)
                last = sliced.rsplit(".", 1)[-1].lower()
                if any(word in last for word in TEXTY) and (rel, sliced) not in ALLOWED:
                    found.append((rel, node.lineno, ast.unparse(node)))
    return found


def test_every_cut_of_outgoing_text_masks_first():
    assert raw_cuts() == [], "cut with masked_output.clipped(text, limit, sink) instead"


def test_the_check_finds_a_raw_cut(tmp_path):
    (tmp_path / "activities").mkdir()
    (tmp_path / "activities" / "probe.py").write_text(
        "def f(stderr, result):\n    return stderr[-2000:], result.message[:LIMIT]\n"
    )
    found = raw_cuts(tmp_path)
    assert [(c[0], c[2]) for c in found] == [
        ("activities/probe.py", "stderr[-2000:]"),
        ("activities/probe.py", "result.message[:LIMIT]"),
    ]
