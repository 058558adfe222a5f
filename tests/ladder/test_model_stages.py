"""L1 vector rename, L2 guarded patch and L6 expert review, against a scripted model."""

import json

import pytest

from compiler.ladder import (
    DomainRule,
    LadderLimits,
    PatchProposal,
    ReviewFinding,
    ReviewVerdict,
    run_ladder,
)
from compiler.ladder.secrets.checksums import github_token
from compiler.ladder.similarity import NGramSimilarity
from tests.ladder.helpers import ScriptedModel, contract, entry

# L1 -------------------------------------------------------------------------------------


def test_l1_renames_a_clear_match_and_records_the_score():
    result = run_ladder(entry(description=...) | {"descripton": "x"}, contract(), stages=["L1"])
    [move] = result.corrections
    assert (move.stage, move.op, move.before, move.path) == (
        "L1",
        "move",
        "/descripton",
        "/description",
    )
    assert "similarity 0.76" in move.reason
    assert result.payload["description"] == "x"


def test_l1_flags_instead_of_renaming_below_the_threshold():
    payload = entry(consultant_name=...) | {"cons_name": "Ada"}
    result = run_ladder(payload, contract(), stages=["L1"])
    assert result.corrections == [] and result.payload["cons_name"] == "Ada"
    [flag] = result.findings
    assert flag.severity == "warning" and flag.path == "/cons_name"
    assert flag.message == (
        "'cons_name' is not declared; closest is 'consultant_name' at 0.57, below the rename "
        "threshold 0.75: not renamed, review it"
    )
    lenient = run_ladder(payload, contract(rename_threshold=0.5), stages=["L1"])
    assert lenient.payload["consultant_name"] == "Ada"


def test_l1_does_not_pick_between_two_equally_close_names():
    schema = {"type": "object", "properties": {"start_date": {}, "start_data": {}}}
    result = run_ladder({"startdat": 1}, contract(schema, rename_threshold=0.5), stages=["L1"])
    assert result.corrections == []
    assert "ambiguous" in result.findings[0].message


def test_l1_does_not_rename_two_fields_onto_one_target():
    payload = entry(description=...) | {"descriptiom": "a", "descriptiox": "b"}
    result = run_ladder(payload, contract(), stages=["L1"])
    assert result.corrections == []
    assert {f.path for f in result.findings} == {"/descriptiom", "/descriptiox"}
    assert all("both resemble 'description'" in f.message for f in result.findings)


def test_l1_a_clearly_closer_field_wins_and_the_other_is_flagged():
    payload = entry(description=...) | {"descripton": "a", "descriptio": "b"}
    result = run_ladder(payload, contract(), stages=["L1"])
    assert [c.before for c in result.corrections] == ["/descriptio"]
    assert result.payload["description"] == "b" and result.payload["descripton"] == "a"
    assert [f.path for f in result.findings] == ["/descripton"]


def test_l1_only_targets_fields_that_are_missing():
    result = run_ladder(entry() | {"descripton": "dup"}, contract(), stages=["L1"])
    assert result.corrections == []
    assert result.findings[0].message == "'descripton' is not declared by the contract"


def test_l1_unrelated_names_are_info_not_warnings():
    result = run_ladder(entry(description=...) | {"zzz": 1}, contract(), stages=["L1"])
    assert [(f.severity, f.message) for f in result.findings] == [
        ("info", "'zzz' is not declared and resembles no declared field")
    ]


def test_l1_uses_the_models_embeddings_when_a_model_is_given():
    vectors = {
        "writeup": [1.0, 0.0],
        "description": [0.9, 0.1],
        "status": [0.0, 1.0],
        "billable": [0.5, 0.5],
    }
    model = ScriptedModel(vectors=vectors)
    payload = {k: v for k, v in entry(description=..., status=..., billable=...).items()}
    result = run_ladder(payload | {"writeup": "w"}, contract(), stages=["L1"], model=model)
    assert model.embedded == [["writeup", "status", "billable", "description"]]
    assert result.payload["description"] == "w"


def test_l1_a_broken_embedding_backend_is_a_warning_not_a_crash():
    model = ScriptedModel(vectors={"writeup": [1.0], "description": [1.0, 0.0]})
    schema = {"type": "object", "properties": {"description": {}}}
    result = run_ladder({"writeup": "w"}, contract(schema), stages=["L1"], model=model)
    assert "similarity backend failed" in result.findings[0].message
    assert result.corrections == []


def test_l1_comparisons_are_bounded():
    c = contract(limits=LadderLimits(max_rename_comparisons=2))
    result = run_ladder({"a1": 1, "a2": 2}, c, stages=["L1"])
    assert "exceed limits.max_rename_comparisons (2); L1 skipped here" in result.findings[0].message


def test_ngram_similarity_is_deterministic_and_symmetric():
    backend = NGramSimilarity()
    a = backend.similarities(["hours_workd"], ["hours_worked", "hourly_rate"])
    b = backend.similarities(["hours_worked", "hourly_rate"], ["hours_workd"])
    assert a == [[b[0][0], b[1][0]]]
    assert a[0][0] > 0.75 > a[0][1]


# L2 -------------------------------------------------------------------------------------


def test_l2_applies_a_valid_value_patch_and_records_it():
    model = ScriptedModel(
        patches=[
            PatchProposal(
                operations=[{"op": "replace", "path": "/status", "value": "approved"}],
                rationale="ACTIVE is not a status; approved is what the text says",
            )
        ]
    )
    result = run_ladder(entry(status="ACTIVE"), contract(), model=model)
    assert result.ok and result.payload["status"] == "approved"
    [fix] = [c for c in result.corrections if c.stage == "L2"]
    assert (fix.op, fix.path, fix.before, fix.after) == ("replace", "/status", "ACTIVE", "approved")
    assert fix.reason.startswith("model patch: ACTIVE is not a status")
    [request] = model.patch_requests
    assert request.errors[0].path == "/status" and request.allowed_ops == ["replace", "add"]


def test_l2_is_not_called_when_the_payload_already_validates():
    model = ScriptedModel()
    result = run_ladder(entry() | {"extra": 1}, contract(), model=model)  # L4 strips extra
    assert result.ok and model.patch_requests == []


def test_l2_can_add_a_missing_declared_value():
    model = ScriptedModel(
        patches=[PatchProposal(operations=[{"op": "add", "path": "/hours", "value": 8}])]
    )
    result = run_ladder(entry(hours=...), contract(), model=model)
    assert result.ok and result.payload["hours"] == 8
    assert [(c.op, c.before) for c in result.corrections if c.stage == "L2"] == [("add", None)]


@pytest.mark.parametrize(
    ("operations", "problem"),
    [
        ([{"op": "remove", "path": "/status"}], "op 'remove' is not allowed"),
        ([{"op": "move", "from": "/a", "path": "/status"}], "op 'move' is not allowed"),
        ([{"op": "add", "path": "/invented", "value": 1}], "not a path the schema defines"),
        ([{"op": "replace", "path": "/status", "value": {"nested": "x"}}], "not structure"),
        ([{"op": "replace", "path": "", "value": 1}], "whole payload cannot be replaced"),
        ([{"op": "replace", "path": "status", "value": "x"}], "must be empty or start with '/'"),
        ([{"op": "replace", "path": "/status"}], "has no 'value'"),
        (["replace /status"], "is not a JSON Patch operation object"),
        (
            [
                {"op": "replace", "path": "/status", "value": "billed"},
                {"op": "replace", "path": "/hours", "value": 99},
            ],
            "still fails: /hours",
        ),
    ],
)
def test_l2_rejects_unsafe_or_insufficient_patches_atomically(operations, problem):
    model = ScriptedModel(patches=[PatchProposal(operations=operations)])
    result = run_ladder(entry(status="ACTIVE"), contract(), model=model)
    assert [c for c in result.corrections if c.stage == "L2"] == []
    assert result.payload is not None and result.payload["status"] == "ACTIVE"
    rejected = [f.message for f in result.findings if f.stage == "L2"]
    assert any(problem in m for m in rejected), rejected
    assert result.blocked_by == "L4"  # the original error still stands


def test_l2_cannot_grow_an_array():
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
    }
    model = ScriptedModel(
        patches=[PatchProposal(operations=[{"op": "add", "path": "/tags/1", "value": "b"}])]
    )
    result = run_ladder({"tags": ["a"]}, contract(schema), model=model)
    assert any(
        "would insert into an array" in f.message for f in result.findings if f.stage == "L2"
    )
    assert result.payload == {"tags": ["a"]}


def test_l2_answers_that_are_not_proposals_are_findings():
    model = ScriptedModel(patches=[["not", "a", "proposal"]])
    result = run_ladder(entry(status="ACTIVE"), contract(), model=model)
    assert "not a PatchProposal" in [f for f in result.findings if f.stage == "L2"][0].message


# L6 -------------------------------------------------------------------------------------


def test_l6_records_the_models_findings_and_an_error_blocks():
    verdict = ReviewVerdict(
        findings=[
            ReviewFinding(
                path="/description", severity="error", message="the description bills a holiday"
            ),
            ReviewFinding(path="no pointer", severity="info", message="looks fine otherwise"),
        ]
    )
    model = ScriptedModel(reviews=[verdict])
    rules = [DomainRule(rule_id="cap", logic={"<=": [{"var": "hours"}, 10]}, message="cap")]
    result = run_ladder(entry(), contract(rules=rules), model=model)
    assert result.blocked_by == "L6" and not result.ok
    l6 = [(f.path, f.severity, f.message) for f in result.findings if f.stage == "L6"]
    assert l6 == [
        ("/description", "error", "the description bills a holiday"),
        ("", "info", "looks fine otherwise (at 'no pointer', not a JSON Pointer)"),
    ]
    [request] = model.review_requests
    assert request.rules[0]["rule_id"] == "cap" and request.payload == entry()


def test_l6_value_fixes_pass_the_same_guard_as_l2():
    good = ReviewVerdict(
        operations=[{"op": "replace", "path": "/hours", "value": 150 / 20}],
        rationale="'should_be_7.5' means 7.5",
    )
    result = run_ladder(entry(), contract(), model=ScriptedModel(reviews=[good]))
    assert [(c.stage, c.path, c.after) for c in result.corrections] == [("L6", "/hours", 7.5)]
    bad = ReviewVerdict(operations=[{"op": "add", "path": "/invented", "value": 1}])
    result = run_ladder(entry(), contract(), model=ScriptedModel(reviews=[bad]))
    assert result.corrections == [] and "invented" not in result.payload
    assert "model patch rejected" in result.findings[-1].message


def test_model_stages_are_skipped_with_a_note_without_a_model():
    result = run_ladder(entry(), contract())
    notes = {f.stage: f.message for f in result.findings}
    assert notes == {
        "L2": "L2 skipped: it needs a LadderModel and none was given",
        "L6": "L6 skipped: it needs a LadderModel and none was given",
    }
    assert result.ok


def test_model_exceptions_propagate_for_the_caller_to_retry():
    class Down(ScriptedModel):
        def review(self, request):
            raise TimeoutError("model timed out")

    with pytest.raises(TimeoutError):
        run_ladder(entry(), contract(), model=Down())


# Patch guardrails (review findings 2 and 10) ---------------------------------------------

BILLING = {
    "type": "object",
    "properties": {
        "hours": {"type": "number"},
        "rate": {"type": "number"},
        "amount": {"type": "number"},
        "note": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "addr": {"type": ["object", "null"], "properties": {"street": {"type": "string"}}},
    },
    "required": ["hours"],
    "additionalProperties": False,
}
AMOUNT_RULE = DomainRule(
    rule_id="amount",
    logic={"==": [{"var": "amount"}, {"*": [{"var": "hours"}, {"var": "rate"}]}]},
    message="amount is not hours x rate",
)
BILL = {"hours": 2, "rate": 10, "amount": 20, "tags": ["a", "b"], "addr": {"street": "Main"}}


def _review(operations, **fields):
    model = ScriptedModel(reviews=[ReviewVerdict(operations=operations)])
    c = contract(BILLING, rules=[AMOUNT_RULE], **fields)
    return run_ladder(dict(BILL), c, model=model, mode="report")


def _rejections(result, stage="L6"):
    return [f.message for f in result.findings if f.stage == stage and "rejected" in f.message]


def test_a_model_patch_that_breaks_a_domain_rule_is_rejected():
    result = _review([{"op": "replace", "path": "/amount", "value": 999}])
    assert result.ok and result.payload["amount"] == 20
    [rejected] = _rejections(result)
    assert "breaks a domain rule" in rejected and "amount is not hours x rate" in rejected


def test_a_model_patch_that_writes_a_secret_is_rejected_and_masked():
    token = github_token("ghp", "b" * 30)  # its CRC32 checksum is right: a GitHub token
    result = _review([{"op": "add", "path": "/note", "value": f"use {token}"}])
    assert "note" not in result.payload
    [rejected] = _rejections(result)
    assert "holds sensitive content (ghp***(40 chars))" in rejected
    assert token not in json.dumps(result.model_dump())


def test_a_model_patch_that_writes_a_card_number_is_rejected():
    result = _review([{"op": "replace", "path": "/amount", "value": 4111111111111111}])
    assert result.payload["amount"] == 20
    assert any("card ending 1111" in m for m in _rejections(result))


def test_l2_patches_face_the_guard_and_the_rules_too():
    schema = {**BILLING, "properties": {**BILLING["properties"], "note": {"type": "integer"}}}
    c = contract(schema, rules=[AMOUNT_RULE])
    leaky = PatchProposal(operations=[{"op": "replace", "path": "/note", "value": 14155550132}])
    breaking = PatchProposal(
        operations=[
            {"op": "replace", "path": "/note", "value": 1},
            {"op": "replace", "path": "/amount", "value": 21},
        ]
    )
    for proposal, problem in ((breaking, "breaks a domain rule"), (leaky, "sensitive content")):
        payload = dict(BILL) | {"note": "x"}
        result = run_ladder(payload, c, model=ScriptedModel(patches=[proposal]), mode="report")
        assert result.payload["note"] == "x", problem
        assert any(problem in m for m in _rejections(result, "L2")), _rejections(result, "L2")


def test_a_patch_may_fix_the_schema_while_an_older_rule_failure_stands():
    schema = {**BILLING, "properties": {**BILLING["properties"], "note": {"type": "integer"}}}
    c = contract(schema, rules=[AMOUNT_RULE])
    fix = PatchProposal(operations=[{"op": "replace", "path": "/note", "value": 1}])
    payload = dict(BILL) | {"amount": 21, "note": "x"}  # the rule already fails
    result = run_ladder(payload, c, model=ScriptedModel(patches=[fix]), mode="report")
    assert result.payload["note"] == 1
    assert [f.stage for f in result.findings if f.severity == "error"] == ["L5"]


@pytest.mark.parametrize(
    ("operation", "problem"),
    [
        ({"op": "add", "path": "/tags/0", "value": "c"}, "would insert into an array"),
        ({"op": "replace", "path": "/addr", "value": None}, "never removes structure"),
        ({"op": "replace", "path": "/tags", "value": "a,b"}, "never removes structure"),
        ({"op": "add", "path": "/addr", "value": None}, "never removes structure"),
    ],
)
def test_patches_never_insert_into_arrays_or_remove_structure(operation, problem):
    result = _review([operation])
    assert result.payload == BILL
    assert any(problem in m for m in _rejections(result)), _rejections(result)


def test_replacing_an_array_element_is_still_allowed():
    result = _review([{"op": "replace", "path": "/tags/0", "value": "c"}])
    assert result.payload["tags"] == ["c", "b"]


def test_what_the_guard_would_find_in_the_models_own_words_is_masked():
    verdict = ReviewVerdict(
        findings=[ReviewFinding(severity="warning", message="mail ada@example.com about it")],
        operations=[{"op": "replace", "path": "/hours", "value": 7}],
        rationale="as ada@example.com said",
    )
    result = run_ladder(entry(), contract(), model=ScriptedModel(reviews=[verdict]))
    dumped = json.dumps(result.model_dump())
    assert "ada@example.com" not in dumped and dumped.count("<a***@***.com>") == 2
