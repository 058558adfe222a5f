"""L3 guard: what hides in JSON text, in numbers and in near-misses, and what report mode returns.

Regression tests for the ladder review (findings 1, 3, 8 and 9, and the report-mode decision).
"""

import json

import pytest

from compiler.ladder import GuardConfig, LadderContract, run_ladder
from compiler.ladder.secrets.checksums import github_token
from tests.ladder.helpers import ScriptedModel, contract, entry
from tests.support.timeouts import SLOW_INPUT_TIMEOUT_S

ADDRESS = {
    "type": "object",
    "properties": {
        "addr": {"type": "object", "properties": {"street": {"type": "string"}}},
        "note": {"type": "string"},
    },
}
GITHUB = github_token("ghp", "a" * 30)
ANTHROPIC = "sk-ant-api03-" + "A" * 40

# Finding 1: JSON text in a string is decoded by L0c; the guard must see what it decodes to.
ESCAPED = [
    ('{"street": "\\u0067hp_' + GITHUB[4:] + '"}', GITHUB, "GitHub token"),
    ('{"street": "\\u0073k-ant-api03-' + "A" * 40 + '"}', ANTHROPIC, "Anthropic API key"),
    ('{"street": "john\\u0040example.com"}', "john@example.com", "email address"),
    ('[{"x": 1}, {"\\u0067hp_' + GITHUB[4:] + '": 1}]', GITHUB, "GitHub token"),  # in a key
]


@pytest.mark.parametrize("mode", ["block", "report"])
@pytest.mark.parametrize(("inner", "secret", "label"), ESCAPED)
def test_secrets_escaped_inside_json_text_in_a_string_are_found(mode, inner, secret, label):
    assert secret not in inner  # only the escaped spelling is in the payload
    model = ScriptedModel()
    result = run_ladder(
        {"addr": inner}, LadderContract(json_schema=ADDRESS), mode=mode, model=model
    )
    assert not result.ok
    [hit] = [f for f in result.findings if f.stage == "L3"]
    assert hit.path == "/addr" and hit.message.startswith(label)
    assert secret not in json.dumps(result.model_dump())
    assert not model.review_requests and not model.patch_requests
    if mode == "block":
        assert (result.blocked_by, result.payload) == ("L3", None)


def test_report_mode_redacts_inside_the_json_text_before_l0c_parses_it():
    result = run_ladder({"addr": ESCAPED[0][0]}, LadderContract(json_schema=ADDRESS), mode="report")
    assert result.payload == {"addr": {"street": "[REDACTED:github_token]"}}
    [redaction] = [c for c in result.corrections if c.stage == "L3"]
    assert redaction.before == '{"street": "<ghp***(40 chars)>"}'


def test_redact_action_redacts_inside_json_text_and_the_run_goes_on():
    c = LadderContract(json_schema=ADDRESS, guard=GuardConfig(action="redact"))
    result = run_ladder({"addr": ESCAPED[2][0]}, c)
    assert result.ok and result.payload == {"addr": {"street": "[REDACTED:email]"}}


def test_json_text_the_guard_finds_nothing_in_is_left_to_l0c():
    result = run_ladder({"addr": '{"street": "M\\u0061in"}'}, LadderContract(json_schema=ADDRESS))
    assert result.ok and result.payload == {"addr": {"street": "Main"}}


# Finding 3: integers are scanned in their decimal form.
NUMBERS = {
    "type": "object",
    "properties": {
        k: {"type": "integer"}
        for k in ("card", "phone", "mobile_phone", "ssn", "count", "ts", "id", "total")
    },
}


@pytest.mark.parametrize(
    ("payload", "label"),
    [
        ({"card": 4111111111111111}, "payment card number"),
        ({"card": 4111111111111111.0}, "payment card number"),
        ({"id": 14155550132}, "phone number"),  # E.164 without "+"
        ({"phone": 4155550132}, "phone number"),
        ({"mobile_phone": 442079460958}, "phone number"),
        ({"ssn": 78051120}, "US social security number"),  # 078-05-1120, leading 0 lost
    ],
)
def test_numbers_are_scanned_for_cards_phones_and_ssns(payload, label):
    result = run_ladder(payload, LadderContract(json_schema=NUMBERS))
    assert result.blocked_by == "L3"
    [hit] = result.findings
    assert hit.message.startswith(label)
    assert str(int(next(iter(payload.values())))) not in json.dumps(result.model_dump())


def test_json_text_with_a_card_number_is_blocked():
    assert run_ladder('{"card": 4111111111111111}', LadderContract(json_schema=NUMBERS)).blocked_by


def test_ordinary_numbers_are_not_reported():
    payload = {
        "count": 1234567890123456,  # no card prefix
        "ts": 1700000000,  # a Unix time: not a valid NANP number, and no phone field
        "id": 4155550132,  # ten digits, but the field name does not say phone
        "total": 123456789,  # nine digits, but the field name does not say SSN
    }
    assert run_ladder(payload, LadderContract(json_schema=NUMBERS)).ok


def test_report_mode_replaces_a_sensitive_number_by_a_placeholder():
    result = run_ladder(
        {"card": 4111111111111111}, LadderContract(json_schema=NUMBERS), mode="report"
    )
    assert result.payload == {"card": "[REDACTED:card]"}
    assert not result.ok  # the L3 error stands, and L4 now reports a string


# Finding 8: repeated private key headers cost linear time.
@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_repeated_private_key_headers_are_scanned_in_linear_time():
    text = "-----BEGIN PRIVATE KEY-----" * (1_000_000 // 27)
    result = run_ladder({"description": text}, contract(), stages=["L3"])
    assert result.findings[0].message.startswith("private key block found")


def test_a_private_key_block_is_redacted_from_begin_to_end():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
    c = contract(guard=GuardConfig(action="redact"))
    result = run_ladder(entry(description=f"key: {key} thanks"), c)
    assert result.payload["description"] == "key: [REDACTED:private_key] thanks"


# Finding 9: near-misses.
GAPS = [
    ("XX00 AKIA2E0A8F3B244C9986", "AWS access key id"),  # a failed IBAN candidate first
    ("40000 4111 1111 1111 1111", "payment card number"),  # a failed card candidate first
    ("4111 1111 1111 1111 202", "payment card number"),  # digits after the card
    ("call 415 555 0132", "phone number"),
    ("call (415) 555 0132", "phone number"),
    ("call 4155550132", "phone number"),
    ("xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef0123456789", "Slack token"),
    ("xoxe-1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MA", "Slack token"),
    ("id_AKIA2E0A8F3B244C9986", "AWS access key id"),
    ("key_sk-ant-api03-" + "a" * 40, "Anthropic API key"),
    ("t_" + GITHUB, "GitHub token"),
    ("Authorization: BEARER abcdefghijklmnop1234", "bearer token"),
    ("ssn 078051120", "US social security number"),
    ("Social Security Number: 078051120", "US social security number"),
    ("ssn 078 05 1120", "US social security number"),
    ("gb82west12345698765432", "IBAN"),
    ("GB82-WEST-1234-5698-7654-32", "IBAN"),
]


@pytest.mark.parametrize(("text", "label"), GAPS, ids=[g[0][:24] for g in GAPS])
def test_detector_gaps_are_closed(text, label):
    result = run_ladder(entry(description=text), contract(), stages=["L3"])
    assert [f.message.split(" found")[0] for f in result.findings] == [label]


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890",  # area code 123 does not exist
        "at 1700000000",  # a Unix time
        "invoice 100 200 3000",
        "ref 078051120",  # nine digits, nothing says SSN
        "INV-2024-03-15 and 2024 03 15",
        "build ab12cdef34567890abcd",  # an IBAN shape, but "AB" issues no IBANs
    ],
)
def test_new_detectors_do_not_fire_on_lookalikes(text):
    assert run_ladder(entry(description=text), contract(), stages=["L3"]).ok


def test_a_field_named_ssn_makes_nine_bare_digits_an_ssn():
    schema = {"type": "object", "properties": {"ssn": {"type": "string"}}}
    result = run_ladder({"ssn": "078051120"}, LadderContract(json_schema=schema))
    assert result.blocked_by == "L3"


# Report mode: the payload is handed back, but never with what the guard found.
def test_report_mode_hands_back_the_payload_with_every_hit_redacted():
    payload = entry(description="mail ada@example.com") | {GITHUB: 1}
    result = run_ladder(payload, contract(), mode="report")
    assert not result.ok and result.blocked_by is None
    assert result.payload["description"] == "mail [REDACTED:email]"
    assert GITHUB not in json.dumps(result.payload)
    l3 = {c.path: (c.op, c.before, c.after) for c in result.corrections if c.stage == "L3"}
    assert l3["/description"] == ("replace", "mail <a***@***.com>", "mail [REDACTED:email]")
    assert l3["/[REDACTED:github_token]"] == (
        "move",
        "/<ghp***(40 chars)>",
        "/[REDACTED:github_token]",
    )
