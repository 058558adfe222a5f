"""What the guard found stays masked in every spelling, and masking stays linear.

Regression tests for the ladder review (findings 4 and 5).
"""

import json

import pytest

from compiler.ladder import CaseTransform, GuardConfig, LadderContract, run_ladder
from compiler.ladder.masking import Masker
from tests.ladder.helpers import contract, entry
from tests.support.timeouts import SLOW_INPUT_TIMEOUT_S

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx"
    + "Q" * 60
    + "\n-----END RSA PRIVATE KEY-----"
)
BEARER = "Bearer abcdEFGH1234/ijklMNOP5678/qrst"


def test_a_private_key_quoted_by_an_l4_message_is_not_repeated():
    result = run_ladder(entry(hours=PRIVATE_KEY), contract(), mode="report")
    dumped = json.dumps(result.model_dump())
    assert "MIIEowIBAAKCAQEAx" not in dumped
    [l4] = [f for f in result.findings if f.stage == "L4" and f.path == "/hours"]
    assert "[REDACTED:private_key]" in l4.message


def test_a_secret_field_name_with_a_slash_is_not_repeated_in_any_path():
    result = run_ladder(entry() | {BEARER: 1}, contract(), mode="report")
    for record in [*result.corrections, *result.findings]:
        assert "ijklMNOP5678" not in json.dumps(record.model_dump()), record


def test_case_transforms_leave_redacted_values_alone():
    c = contract(
        transforms=[
            CaseTransform(path="/consultant_name", style="title"),
            CaseTransform(path="/description", style="upper"),
        ]
    )
    payload = entry(
        consultant_name="ada.lovelace@example.com", description="key sk-ant-api03-" + "a" * 30
    )
    result = run_ladder(payload, c, mode="report")
    assert result.payload["consultant_name"] == "[REDACTED:email]"
    assert result.payload["description"] == "key [REDACTED:anthropic_key]"
    dumped = json.dumps(result.model_dump()).lower()
    assert "lovelace@example.com" not in dumped and "sk-ant-api03-aaa" not in dumped
    assert not [c for c in result.corrections if c.stage == "L0e"]


def test_the_masker_masks_repr_json_pointer_and_case_changed_forms():
    email, token = "ada.lovelace@example.com", BEARER
    masker = Masker({PRIVATE_KEY: "---***", token: "Bea***", email: "a***@***.com"})
    texts = [
        repr(PRIVATE_KEY),  # "\n" escaped, as jsonschema's messages quote values
        json.dumps(PRIVATE_KEY),
        "/" + token.replace("~", "~0").replace("/", "~1"),  # a JSON Pointer token
        email.title(),
        email.upper() + " and " + email,
    ]
    for text in texts:
        masked = masker.text(text)
        assert "MIIEow" not in masked and "ijklMNOP" not in masked.replace("~1", "/")
        assert "lovelace" not in masked.lower(), masked
    assert masker.text("/" + token.replace("/", "~1")) == "/<Bea***>"
    assert masker.text(email.upper() + " and " + email) == "<a***@***.com> and <a***@***.com>"


def test_the_masker_masks_sensitive_numbers_and_keys():
    masker = Masker({"4111111111111111": "card ending 1111"})
    assert masker.value({"card 4111111111111111": 4111111111111111}) == {
        "card <card ending 1111>": "<card ending 1111>"
    }


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_redacting_thousands_of_distinct_emails_is_fast():
    schema = {
        "type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
    }
    c = LadderContract(json_schema=schema, guard=GuardConfig(action="redact"))
    payload = {"notes": [f"mail user{i}@example.com" for i in range(8000)]}
    result = run_ladder(payload, c)
    assert result.ok and len(result.corrections) == 8000
    assert "user7999@example.com" not in json.dumps(result.model_dump())


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_masking_many_values_is_linear():
    sensitive = {f"user{i}@example.com": f"u***{i}" for i in range(20_000)}
    masker = Masker(sensitive)
    text = " ".join(f"USER{i}@EXAMPLE.COM" for i in range(0, 20_000, 7))
    masked = masker.text(text)
    assert "@EXAMPLE" not in masked and masked.startswith("<u***0> <u***7>")
