"""L0, L0b, L0c, L0d and L0e, each seen through run_ladder with only the stages it needs."""

import pytest

from compiler.ladder import (
    CaseTransform,
    DateTransform,
    EnumCaseTransform,
    LadderContract,
    ScaleTransform,
    run_ladder,
)
from compiler.ladder.transforms import title_case
from tests.ladder.helpers import TIME_ENTRY, contract, entry

ROWS = {"type": "array", "items": TIME_ENTRY}


def _moves(result):
    return [(c.stage, c.before, c.after) for c in result.corrections if c.op == "move"]


# L0 -------------------------------------------------------------------------------------


def test_l0_missing_required_is_an_error_when_nothing_later_can_supply_it():
    result = run_ladder(entry(hours=...), contract(), stages=["L0"])
    [finding] = result.findings
    assert (finding.stage, finding.path, finding.severity) == ("L0", "/hours", "error")
    assert result.blocked_by == "L0"


def test_l0_defers_a_missing_required_field_to_l4_when_l4_runs():
    result = run_ladder(entry(hours=...), contract(), stages=["L0", "L4"])
    assert [(f.stage, f.severity) for f in result.findings] == [
        ("L0", "warning"),
        ("L4", "error"),
    ]
    assert result.blocked_by == "L4"


def test_l0_knows_which_stage_will_supply_a_required_field():
    payload = entry(client_id=..., hours=...) | {"Customer-ID": "c-9"}
    c = contract(synonyms={"customer_id": "client_id"}, defaults={"/hours": 0})
    result = run_ladder(payload, c, stages=["L0", "L0b", "L0d"])
    assert result.ok and result.payload["client_id"] == "c-9" and result.payload["hours"] == 0
    assert {f.path: f.message for f in result.findings} == {
        "/client_id": "required property 'client_id' is missing; L0b will supply it",
        "/hours": "required property 'hours' is missing; L0d will supply it",
    }


def test_l0_checks_required_properties_of_each_row_of_an_array():
    rows = [entry(), entry(entry_id=...)]
    [finding] = run_ladder(rows, contract(ROWS), stages=["L0"]).findings
    assert (finding.path, finding.severity) == ("/1/entry_id", "error")


def test_l0_warns_instead_of_blocking_when_l0c_will_fix_the_top_level_shape():
    result = run_ladder({"rows": [entry()]}, contract(ROWS), stages=["L0", "L0c"])
    assert result.ok and result.payload == [entry()]
    assert result.findings[0].severity == "warning"
    assert "L0c will repair it" in result.findings[0].message
    blocked = run_ladder({"rows": [entry()]}, contract(ROWS), stages=["L0"])
    assert blocked.blocked_by == "L0" and blocked.findings[0].severity == "error"


# L0b ------------------------------------------------------------------------------------


def test_l0b_renames_synonyms_and_case_variants_keeping_field_order():
    c = contract(synonyms={"customer_id": "client_id", "date": "work_date"})
    payload = {"entry_id": "e", "customer_id": "c", "date": "2024-01-01", "Hours": 1}
    result = run_ladder(payload, c, stages=["L0b"])
    assert list(result.payload) == ["entry_id", "client_id", "work_date", "hours"]
    assert _moves(result) == [
        ("L0b", "/customer_id", "/client_id"),
        ("L0b", "/date", "/work_date"),
        ("L0b", "/Hours", "/hours"),
    ]
    assert result.corrections[2].reason == "case/separator variant of 'hours'"


def test_l0b_never_overwrites_a_present_canonical_field():
    c = contract(synonyms={"customer_id": "client_id"})
    result = run_ladder(entry() | {"customer_id": "other"}, c, stages=["L0b"])
    assert result.payload["client_id"] == "c-1" and result.payload["customer_id"] == "other"
    [finding] = result.findings
    assert finding.severity == "warning" and "already present" in finding.message


def test_l0b_renames_inside_nested_objects_and_arrays():
    schema = {"type": "object", "properties": {"entries": ROWS}}
    c = LadderContract(json_schema=schema, synonyms={"customer_id": "client_id"})
    payload = {"entries": [{"customer_id": "a"}, {"client_id": "b"}]}
    result = run_ladder(payload, c, stages=["L0b"])
    assert result.payload == {"entries": [{"client_id": "a"}, {"client_id": "b"}]}
    assert result.corrections[0].path == "/entries/0/client_id"


# L0c ------------------------------------------------------------------------------------

NESTED = {
    "type": "object",
    "properties": {
        "entry": TIME_ENTRY,
        "rows": ROWS,
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


@pytest.mark.parametrize(
    ("payload", "expected", "why"),
    [
        ({"entry": '{"entry_id": "e"}'}, {"entry": {"entry_id": "e"}}, "JSON text parsed"),
        ({"rows": '[{"hours": 1}]'}, {"rows": [{"hours": 1}]}, "JSON text parsed"),
        ({"rows": {"data": [{"hours": 1}]}}, {"rows": [{"hours": 1}]}, "wrapper object"),
        ({"entry": {"data": {"hours": 1}}}, {"entry": {"hours": 1}}, "wrapper object"),
        ({"rows": {"hours": 1}}, {"rows": [{"hours": 1}]}, "wrapped in a 1-item array"),
        ({"entry": [{"hours": 1}]}, {"entry": {"hours": 1}}, "one-item array"),
    ],
)
def test_l0c_structural_fixes(payload, expected, why):
    result = run_ladder(payload, LadderContract(json_schema=NESTED), stages=["L0c"])
    assert result.payload == expected
    [correction] = result.corrections
    assert correction.op == "replace" and why in correction.reason
    assert correction.before == next(iter(payload.values()))


@pytest.mark.parametrize(
    "payload",
    [
        {"entry": "not json"},
        {"entry": "[1, 2]"},  # parses, but to an array where an object is required
        {"entry": {"meta": {"unrelated": 1}}},  # inner keys are not the declared ones
        {"tags": {"a": "x", "b": "y"}},  # an object of strings is not a string item
        {"entry": '{"a": ' * 100 + "1" + "}" * 100},  # would exceed the depth limit
    ],
)
def test_l0c_leaves_what_it_cannot_fix_safely(payload):
    result = run_ladder(payload, LadderContract(json_schema=NESTED), stages=["L0c"])
    assert result.corrections == [] and result.payload == payload


# L0d ------------------------------------------------------------------------------------


def test_l0d_contract_and_schema_defaults_fill_only_missing_fields():
    schema = {
        **TIME_ENTRY,
        "properties": {
            **TIME_ENTRY["properties"],
            "status": {"type": "string", "default": "draft"},
        },
    }
    c = contract(schema, defaults={"/billable": True})
    result = run_ladder(entry(billable=..., status=...), c, stages=["L0d"])
    assert result.payload["billable"] is True and result.payload["status"] == "draft"
    assert [(x.path, x.op, x.after, x.reason) for x in result.corrections] == [
        ("/billable", "add", True, "default from the contract"),
        ("/status", "add", "draft", "default from the schema"),
    ]
    untouched = run_ladder(entry(billable=False), c, stages=["L0d"])
    assert untouched.payload["billable"] is False


def test_l0d_wildcard_defaults_apply_to_every_row_and_are_not_shared():
    c = contract(ROWS, defaults={"/*/status": "draft"}, use_schema_defaults=False)
    result = run_ladder([{"hours": 1}, {"hours": 2, "status": "billed"}, {}], c, stages=["L0d"])
    assert [r.get("status") for r in result.payload] == ["draft", "billed", "draft"]
    assert [x.path for x in result.corrections] == ["/0/status", "/2/status"]


def test_contract_defaults_must_fit_their_schema():
    with pytest.raises(
        ValueError,
        match="default '/hours' = 99 does not fit its schema: 99 is greater than the maximum of 24",
    ):
        contract(defaults={"/hours": 99})
    refs = {
        "type": "object",
        "$defs": {"s": {"enum": ["a", "b"]}},
        "properties": {"s": {"$ref": "#/$defs/s"}},
    }
    assert LadderContract(json_schema=refs, defaults={"/s": "a"}).defaults == {"/s": "a"}
    with pytest.raises(ValueError, match="'c' is not one of"):
        LadderContract(json_schema=refs, defaults={"/s": "c"})


def test_l0d_never_creates_parents():
    schema = {"type": "object", "properties": {"entry": TIME_ENTRY}}
    c = LadderContract(json_schema=schema, defaults={"/entry/status": "draft"})
    assert run_ladder({}, c, stages=["L0d"]).payload == {}


def test_default_paths_must_be_defined_by_the_schema():
    with pytest.raises(ValueError, match="default '/nope' is not a path the schema defines"):
        contract(defaults={"/nope": 1})


# L0e ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("JOHN SMITH", "John Smith"),
        ("mary-jane o'neil", "Mary-Jane O'Neil"),
        ("Ronald McDonald", "Ronald McDonald"),
        ("élodie durand", "Élodie Durand"),
    ],
)
def test_title_case(text, expected):
    assert title_case(text) == expected


def test_l0e_case_transforms():
    c = contract(
        transforms=[
            CaseTransform(path="/consultant_name"),
            CaseTransform(path="/client_id", style="upper"),
        ]
    )
    result = run_ladder(entry(consultant_name="ADA LOVELACE", client_id="acme"), c, stages=["L0e"])
    assert result.payload["consultant_name"] == "Ada Lovelace"
    assert result.payload["client_id"] == "ACME"
    assert [x.reason for x in result.corrections] == ["title case", "upper case"]


def test_l0e_scaling_numbers_and_units():
    schema = {
        "type": "object",
        "properties": {"hours": {"type": "number"}, "cents": {"type": "integer"}},
    }
    c = LadderContract(
        json_schema=schema,
        transforms=[
            ScaleTransform(path="/hours", units={"min": 1 / 60, "h": 1, "d": 8}),
            ScaleTransform(path="/cents", factor=100),
        ],
    )
    for given, hours in [("90 min", 1.5), ("2h", 2), ("1.5 d", 12), (3, 3)]:
        result = run_ladder({"hours": given, "cents": 12.5}, c, stages=["L0e"])
        assert result.payload == {"hours": hours, "cents": 1250}
        assert isinstance(result.payload["cents"], int)
    [warning] = run_ladder({"hours": "3 parsecs"}, c, stages=["L0e"]).findings
    assert "has no unit this transform knows" in warning.message


def test_l0e_enum_case_folding():
    c = contract(transforms=[EnumCaseTransform(path="/status")])
    assert run_ladder(entry(status="APPROVED"), c, stages=["L0e"]).payload["status"] == "approved"
    assert run_ladder(entry(status="Billed "), c, stages=["L0e"]).payload["status"] == "billed"
    assert run_ladder(entry(status="paid"), c, stages=["L0e"]).corrections == []


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("03/15/2024", "2024-03-15"),
        ("2024/3/5", "2024-03-05"),
        ("2024-3-5", "2024-03-05"),
        ("20240315", "2024-03-15"),
        ("15.03.2024", "2024-03-15"),
        ("March 15th, 2024", "2024-03-15"),
        ("15 Mar 2024", "2024-03-15"),
        ("Feb 29, 2024", "2024-02-29"),
    ],
)
def test_l0e_dates_are_normalized_to_iso(given, expected):
    c = contract(transforms=[DateTransform(path="/work_date")])
    result = run_ladder(entry(work_date=given), c, stages=["L0e"])
    assert result.payload["work_date"] == expected
    assert result.corrections[0].before == given


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("03/04/2024", "ambiguous (2024-03-04 or 2024-04-03)"),
        ("Feb 29, 2023", "is not a date in any accepted format"),
        ("02/30/2024", "is not a date in any accepted format"),
        ("yesterday", "is not a date in any accepted format"),
    ],
)
def test_l0e_never_guesses_a_date(given, message):
    c = contract(
        transforms=[
            DateTransform(
                path="/work_date", input_formats=("MM/DD/YYYY", "DD/MM/YYYY", "Month D, YYYY")
            )
        ]
    )
    result = run_ladder(entry(work_date=given), c, stages=["L0e"])
    assert result.payload["work_date"] == given and result.corrections == []
    assert message in result.findings[0].message


def test_l0e_applies_to_every_row_with_a_wildcard():
    c = contract(ROWS, transforms=[DateTransform(path="/*/work_date")])
    result = run_ladder(
        [{"work_date": "1/2/2024"}, {"work_date": "2024-01-03"}, {}], c, stages=["L0e"]
    )
    assert [r.get("work_date") for r in result.payload] == ["2024-01-02", "2024-01-03", None]


def test_transform_paths_must_be_defined_by_the_schema():
    with pytest.raises(ValueError, match="case transform '/name' is not a path the schema"):
        contract(transforms=[CaseTransform(path="/name")])
