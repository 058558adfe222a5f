"""Shared constants and helpers for the stdlib skill package tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from activities.compile.typelib import STDLIB_DIR
from activities.sandbox.runner import SandboxResult, run_sandboxed
from tests.support.sandbox import sandbox_limits

SKILLS_DIR = STDLIB_DIR / "skills"
# Where the sandboxed tests bind skills from: a copy outside the checkout, as the worker stages
# them (skills_materialize.py), since a checkout path must never show inside a sandbox.
STAGED: dict[str, Path] = {}


REPORT, TABLE, EXTRACT = "html-report-generator", "tabular-toolkit", "document-text-extractor"
# id: (output schema file, scripts a step calls, modules those scripts import)
PACKAGES = {
    REPORT: ("validation.schema.json", ["render_report.py", "validate_report.py"], ["barchart.py"]),
    TABLE: ("profile.schema.json", ["table.py"], ["tableio.py", "tableprofile.py"]),
    EXTRACT: ("extraction.schema.json", ["extract.py"], ["markup.py"]),
}
LIMITS = sandbox_limits(cpu_seconds=60, file_size_mb=64, wall_clock_s=120, output_cap_bytes=1 << 20)


def put(ws: Path, name: str, data: str | bytes) -> str:
    """Write an input file; returns its path as the step sees it (relative to /workspace)."""
    path = ws / "input" / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return f"input/{name}"


def run(ws: Path, skill: str, script: str, *args: str) -> SandboxResult:
    return run_sandboxed(
        ["python", f"/skills/{skill}/scripts/{script}", *args],
        workspace=ws,
        limits=LIMITS,
        skills={skill: STAGED[skill]},
    )


def ok(result: SandboxResult) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    assert result.isolation == "bwrap" and result.violations == []
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def schema_errors(schema: dict[str, Any] | None, document: Any) -> list[str]:
    assert schema is not None
    return [e.message for e in Draft202012Validator(schema).iter_errors(document)]


SALES = (
    "id,region,amount,sold_on,code,note\n"
    "1,north,10.5,2024-01-05,007,\n"
    '2,south,20,2024-02-10,008,"late, paid"\n'
    "3,north,,2024-01-01,009,ok\n"
    "4,east,5,2023-12-31,010,ok\n"
)
