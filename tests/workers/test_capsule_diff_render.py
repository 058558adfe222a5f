"""workers/cli/capsule_diff.py: what `forge capsule diff` prints for a CapsuleDiff."""

import io

from rich.console import Console

from compiler.capsule.diff import diff_capsules
from schemas.capsule import CapsuleDiff, InputColumn, ScalarParameter
from tests.compiler.capsule_samples import CHECK_1, CODE, LOAD, content, contract, program, version
from workers.cli.capsule_diff import render_diff

BASE = content()


def shown(d: CapsuleDiff) -> list[str]:
    console = Console(record=True, width=100, file=io.StringIO())
    render_diff(d, console)
    return [line.rstrip() for line in console.export_text().splitlines()]


def diff(**overrides: object) -> CapsuleDiff:
    return diff_capsules(version(BASE, 1), version(content(**overrides), 2), CODE.__getitem__)


def row(lines: list[str], first: str) -> list[str]:
    """The cells of the table row whose first cell is `first`."""
    for line in lines:
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n" + "\n".join(lines))


def test_identical_is_one_line():
    d = diff_capsules(version(BASE, 1), version(content(), 3), CODE.__getitem__)
    digest = d.capsule_hash_a.split(":")[1][:12]
    assert shown(d) == [f"audit@1 and audit@3 are identical (same capsule hash {digest})"]


def test_steps_table_shows_added_removed_and_contract_change():
    new_check = "# [bold]not markup[/] :smile:\n" + CHECK_1
    d = diff(
        programs=[
            program("check", new_check, contract_hash=contract("check", "v2")),
            program("report", "print('done')\n", backend="duckdb"),
        ]
    )
    lines = shown(d)
    a, b = (h.split(":")[1][:12] for h in (d.capsule_hash_a, d.capsule_hash_b))
    assert lines[0] == f"audit@1 -> audit@2  capsule {a} -> {b}"
    old, new = (contract("check", s).split(":")[1][:12] for s in ("", "v2"))
    assert row(lines, "load")[:3] == ["load", "removed", contract("load")[7:19]]
    assert row(lines, "report")[:3] == ["report", "added", contract("report")[7:19]]
    assert row(lines, "check") == ["check", "changed", f"{old} -> {new}", "code changed"]
    at = lines.index("code of check")
    assert lines[at + 1 : at + 6] == [
        "--- a/check/turn-1.py",
        "+++ b/check/turn-1.py",
        "@@ -1,2 +1,3 @@",
        "+# [bold]not markup[/] :smile:",
        " total = sum(float(r['hours']) for r in rows)",
    ]


def test_step_fields_and_cell_count_are_detailed():
    d = diff(programs=[program("load", LOAD, structural=True), program("check", CHECK_1, LOAD)])
    lines = shown(d)
    assert row(lines, "load")[3] == "structural: false -> true"
    at = lines.index(next(line for line in lines if line.startswith("│ check ")))
    assert row(lines, "check")[3] == "cells: 1 -> 2"
    assert lines[at + 1].split("│")[4].strip() == "code changed"
    assert "+++ b/check/turn-2.py" in lines and "--- /dev/null" in lines


def test_parameter_changes():
    inp = BASE.inputs[0]
    columns = [*inp.columns, InputColumn(name="client", type="string")]
    d = diff(
        inputs=[inp.model_copy(update={"columns": columns})],
        scalars=[ScalarParameter(name="threshold", type="integer", default=1)],
        parameter_schema={**BASE.parameter_schema, "required": []},
    )
    lines = shown(d)
    assert "parameter changes" in lines
    assert row(lines, "input time_entries") == [
        "input time_entries",
        "changed",
        'column client: + "string"',
    ]
    assert row(lines, "scalar threshold")[:2] == ["scalar threshold", "changed"]
    at = lines.index(next(line for line in lines if line.startswith("│ scalar threshold ")))
    assert [line.split("│")[3].strip() for line in lines[at : at + 3]] == [
        'type: "number" -> "integer"',
        "default: 0.5 -> 1",
        'read_by: ["check"] -> []',
    ]
    assert row(lines, "schema /required/0") == ["schema /required/0", "removed", '- "time_entries"']


def test_governance_changes():
    d = diff(
        governance={"egress": {"allow": []}, "budgets": {"usd": 5}},
        isolation_policy={"network": "host", "memory_mb": 512},
    )
    lines = shown(d)
    assert "governance changes" in lines
    assert row(lines, "governance.egress.allow") == [
        "governance.egress.allow",
        "changed",
        '["api.example.com"] -> []',
    ]
    assert row(lines, "isolation_policy.network") == [
        "isolation_policy.network",
        "changed",
        '"none" -> "host"',
    ]
    assert not any(line.startswith("code of") for line in lines)


def test_plan_hash_line_and_a_provenance_only_change():
    d = diff(plan_hash="sha256:" + "f" * 64)
    assert f"plan hash: {'a' * 12} -> {'f' * 12}" in shown(d)
    prov = BASE.provenance.model_copy(update={"source_run_id": "run-2"})
    lines = shown(diff(provenance=prov))
    assert lines[-1].startswith("no step, parameter, policy or plan differs")
