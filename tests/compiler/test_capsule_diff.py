"""compiler/capsule/diff.py: every kind of change between two capsule versions, by hand."""

import pytest

from compiler.capsule.diff import diff_capsules, tree_changes
from schemas.capsule import CapsuleDiff, InputColumn, ScalarParameter, ValueChange
from tests.compiler.capsule_samples import (
    CHECK_1,
    CHECK_2,
    CODE,
    LOAD,
    content,
    contract,
    program,
    version,
)

BASE = content()


def diff(**overrides: object) -> CapsuleDiff:
    return diff_capsules(version(BASE, 1), version(content(**overrides), 2), CODE.__getitem__)


def step(d: CapsuleDiff, key: str):
    return next(s for s in d.steps if s.step_key == key)


def test_identical_versions_have_no_changes_and_read_no_code():
    asked = []
    d = diff_capsules(version(BASE, 1), version(content(), 2), asked.append)
    assert d.identical and d.capsule_hash_a == d.capsule_hash_b
    assert (d.ref_a, d.ref_b) == ("audit@1", "audit@2")
    assert [s.change for s in d.steps] == ["unchanged", "unchanged"]
    assert d.steps_kept == ["load", "check"] and not d.steps_added and not d.steps_removed
    assert not (d.inputs or d.scalars or d.parameter_schema or d.governance or d.plan_hash)
    assert asked == []


def test_added_and_removed_steps():
    d = diff(programs=[program("check", CHECK_1), program("report", "print('hi')\n")])
    assert not d.identical
    assert d.steps_removed == ["load"] and d.steps_added == ["report"]
    assert d.steps_kept == ["check"] and step(d, "check").change == "unchanged"
    removed, added = step(d, "load"), step(d, "report")
    assert (removed.contract_a, removed.contract_b) == (contract("load"), None)
    assert (added.contract_a, added.contract_b) == (None, contract("report"))
    assert removed.code_diff == added.code_diff == ""
    assert [s.step_key for s in d.steps] == ["load", "check", "report"]


def test_contract_backend_and_structural_changes():
    d = diff(
        programs=[
            program("load", LOAD, contract_hash=contract("load", "v2"), backend="duckdb"),
            program("check", CHECK_1, structural=True, source="frozen"),
        ]
    )
    load, check = step(d, "load"), step(d, "check")
    assert load.change == "changed" and load.code_diff == ""
    assert (load.contract_a, load.contract_b) == (contract("load"), contract("load", "v2"))
    assert load.fields == [
        ValueChange(path="backend", change="changed", old="python", new="duckdb")
    ]
    assert check.contract_a == check.contract_b
    assert {(f.path, f.old, f.new) for f in check.fields} == {
        ("source", "session", "frozen"),
        ("structural", False, True),
    }


def test_code_change_is_a_unified_diff():
    new_check = CHECK_1.replace("print(total)", "print(round(total, 2))")
    d = diff(programs=[program("load", LOAD), program("check", new_check)])
    check = step(d, "check")
    assert check.change == "changed" and check.fields == []
    assert check.code_diff.splitlines() == [
        "--- a/check/turn-1.py",
        "+++ b/check/turn-1.py",
        "@@ -1,2 +1,2 @@",
        " total = sum(float(r['hours']) for r in rows)",
        "-print(total)",
        "+print(round(total, 2))",
    ]
    assert step(d, "load").change == "unchanged"


def test_only_differing_programs_are_read():
    asked: list[str] = []

    def code_of(sha: str) -> str:
        asked.append(sha)
        return CODE[sha]

    b = content(programs=[program("load", LOAD), program("check", CHECK_2)])
    diff_capsules(version(BASE, 1), version(b, 2), code_of)
    assert sorted(CODE[s] for s in asked) == sorted([CHECK_1, CHECK_2])


def test_a_cell_added_diffs_against_dev_null():
    d = diff(programs=[program("load", LOAD), program("check", CHECK_1, CHECK_2)])
    check = step(d, "check")
    assert (check.cells_a, check.cells_b) == (1, 2) and check.change == "changed"
    lines = check.code_diff.splitlines()
    assert lines[:3] == ["--- /dev/null", "+++ b/check/turn-2.py", "@@ -0,0 +1,2 @@"]
    assert lines[3:] == ["+" + line for line in CHECK_2.splitlines()]


def test_a_cell_removed_diffs_to_dev_null():
    a = content(programs=[program("load", LOAD), program("check", CHECK_1, CHECK_2)])
    d = diff_capsules(version(a, 1), version(BASE, 2), CODE.__getitem__)
    lines = step(d, "check").code_diff.splitlines()
    assert lines[:2] == ["--- a/check/turn-2.py", "+++ /dev/null"]
    assert all(line.startswith("-") for line in lines[3:])


def test_a_missing_final_newline_is_marked():
    d = diff(programs=[program("load", LOAD.rstrip("\n")), program("check", CHECK_1)])
    assert d.steps[0].code_diff.splitlines()[-1] == "\\ No newline at end of file"


def test_input_column_added_and_retyped():
    inp = BASE.inputs[0]
    columns = [
        InputColumn(name="date", type="date"),
        InputColumn(name="hours", type="number"),
        InputColumn(name="client", type="string"),
    ]
    d = diff(inputs=[inp.model_copy(update={"columns": columns, "validator": "json_rows"})])
    (change,) = d.inputs
    assert change.name == "time_entries" and change.change == "changed"
    assert change.columns == [
        ValueChange(path="date", change="changed", old="string", new="date"),
        ValueChange(path="client", change="added", new="string"),
    ]
    assert change.fields == [
        ValueChange(path="validator", change="changed", old="csv", new="json_rows")
    ]


def test_input_added_and_removed():
    other = BASE.inputs[0].model_copy(update={"name": "contracts", "columns": []})
    d = diff(inputs=[other])
    assert [(i.name, i.change) for i in d.inputs] == [
        ("time_entries", "removed"),
        ("contracts", "added"),
    ]


def test_scalar_type_changed_and_scalar_added():
    d = diff(
        scalars=[
            ScalarParameter(name="threshold", type="integer", default=1, read_by=["check"]),
            ScalarParameter(name="period", type="string", default="2026-10"),
        ]
    )
    threshold, period = d.scalars
    assert threshold.change == "changed"
    assert threshold.fields == [
        ValueChange(path="type", change="changed", old="number", new="integer"),
        ValueChange(path="default", change="changed", old=0.5, new=1),
    ]
    assert (period.name, period.change, period.fields) == ("period", "added", [])


def test_parameter_schema_changes_outside_named_parameters_are_pointers():
    schema = {
        "type": "object",
        "properties": {
            "time_entries": {"type": "string"},
            "threshold": {"type": "number", "default": 0.5},
            "a/b": {"type": "string"},
        },
        "required": ["time_entries", "threshold"],
    }
    d = diff(parameter_schema=schema)
    assert d.parameter_schema == [
        ValueChange(path="/properties/time_entries/format", change="removed", old="path"),
        ValueChange(path="/properties/a~1b", change="added", new={"type": "string"}),
        ValueChange(path="/required/1", change="added", new="threshold"),
    ]


def test_parameter_schema_entries_of_a_changed_parameter_are_not_repeated():
    schema = dict(BASE.parameter_schema)
    schema["properties"] = {**schema["properties"], "threshold": {"type": "integer"}}
    scalar = BASE.scalars[0].model_copy(update={"type": "integer"})
    d = diff(parameter_schema=schema, scalars=[scalar])
    assert [s.name for s in d.scalars] == ["threshold"] and d.parameter_schema == []


def test_governance_and_isolation_changes_are_dotted_keys():
    d = diff(
        governance={"egress": {"allow": ["api.example.com", "b.example.com"]}, "hitl": True},
        isolation_policy={"network": "none", "memory_mb": 1024},
    )
    assert d.governance == [
        ValueChange(
            path="egress.allow",
            change="changed",
            old=["api.example.com"],
            new=["api.example.com", "b.example.com"],
        ),
        ValueChange(path="budgets", change="removed", old={"usd": 5}),
        ValueChange(path="hitl", change="added", new=True),
    ]
    assert d.isolation_policy == [
        ValueChange(path="memory_mb", change="changed", old=512, new=1024)
    ]


def test_plan_hash_and_goal_template():
    d = diff(plan_hash="sha256:" + "f" * 64, goal_template="audit {period}")
    assert d.plan_hash == ValueChange(
        path="plan_hash", change="changed", old="sha256:" + "a" * 64, new="sha256:" + "f" * 64
    )
    assert d.goal_template is not None and d.goal_template.new == "audit {period}"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (1, 1.0, [ValueChange(path="", change="changed", old=1, new=1.0)]),
        (True, 1, [ValueChange(path="", change="changed", old=True, new=1)]),
        ({"x": [1]}, {"x": [1]}, []),
    ],
)
def test_json_values_are_compared_as_json(old, new, expected):
    assert tree_changes(old, new, pointer=True) == expected


def test_a_changed_root_is_named_by_its_dotted_root():
    assert tree_changes(1, 2, pointer=False)[0].path == "."
