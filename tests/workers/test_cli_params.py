"""`forge run PLAN.json --param NAME=VALUE`: checked before anything is uploaded, then read."""

import json
import re
from pathlib import Path

import pytest

from tests.workflows.plans import code_step, plan

READS = """
import json, forge_bridge
values = {n: forge_bridge.param(n) for n in ("cutoff", "limit", "strict")}
open("output/values.json", "w").write(json.dumps(values))
"""


def _plan_file(tmp_path: Path) -> Path:
    document = {
        **plan(code_step("reads", READS, ["output/values.json"])),
        "parameters": [
            {"name": "cutoff", "type": "string", "description": "last day included"},
            {"name": "limit", "type": "integer", "default": 10},
            {"name": "strict", "type": "boolean", "default": False},
        ],
    }
    path = tmp_path / "params-plan.json"
    path.write_text(json.dumps(document))
    return path


def _values(tmp_path: Path, output: str) -> dict:
    run_id = re.search(r"run-\d{8}-\d{6}-[0-9a-f]{6}", output).group(0)
    copied = tmp_path / "home" / "outputs" / run_id / "output" / "values.json"
    return json.loads(copied.read_text())


def test_two_runs_of_one_plan_with_other_values_write_other_outputs(cli, tmp_path):
    path = _plan_file(tmp_path)
    first = cli("run", path, "--param", "cutoff=2026-01-31")
    assert first.exit_code == 0, first.output
    second = cli(
        "run", path, "--param", "cutoff=2026-02-28", "--param", "limit=3", "--param", "strict=yes"
    )
    assert second.exit_code == 0, second.output
    assert _values(tmp_path, first.output) == {
        "cutoff": "2026-01-31",
        "limit": 10,
        "strict": False,
    }
    assert _values(tmp_path, second.output) == {
        "cutoff": "2026-02-28",
        "limit": 3,
        "strict": True,
    }


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--param", "cutoff=x", "--param", "limit=many"],
            "parameter 'limit' must be an integer, not 'many'",
        ),
        (
            ["--param", "cutoff=x", "--param", "limt=3"],
            "--param limt: not a parameter of this plan; declared: cutoff, limit, strict",
        ),
        ([], "parameter 'cutoff' (string) has no default and was not given"),
        (["--param", "cutoff"], "--param 'cutoff': expected NAME=VALUE"),
        (["--param", "cutoff=a", "--param", "cutoff=b"], "--param cutoff is given twice"),
    ],
    ids=["bad-value", "unknown", "missing", "malformed", "twice"],
)
def test_a_bad_parameter_is_refused_before_anything_is_uploaded(cli, tmp_path, args, said):
    refused = cli("run", _plan_file(tmp_path), *args)
    assert refused.exit_code == 2, refused.output
    line = " ".join(refused.output.split())
    assert line.startswith("error: PARAMETER_INVALID: ") and said in line
    # Nothing was uploaded, nothing started.
    home = tmp_path / "home"
    assert not (home / "outputs").exists()
    assert not [p for p in (home / "artifacts").rglob("*") if p.is_file()]
