"""L3 guard: what it finds, what it ignores, and that it never repeats what it found."""

import json

import pytest

from compiler.ladder import GuardConfig, run_ladder
from compiler.ladder.detectors import iban_valid, luhn
from tests.ladder.helpers import ScriptedModel, contract, entry

ANTHROPIC = "sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
OPENAI = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 2
AWS_ID = "AKIA2E0A8F3B244C9986"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9t3Kq8Lp"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
SLACK = "xoxb-2400000000-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
BEARER = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"

HITS = [
    ("email", "reach me at ada.lovelace@example.co.uk today", "email address"),
    ("phone", "call (415) 555-0132 after six", "phone number"),
    ("phone", "call +44 20 7946 0958", "phone number"),
    ("phone", "or +14155550132", "phone number"),
    ("us_ssn", "ssn 123-45-6789", "US social security number"),
    ("iban", "pay to GB82 WEST 1234 5698 7654 32", "IBAN"),
    ("iban", "DE89370400440532013000", "IBAN"),
    ("card", "card 4111 1111 1111 1111 exp 12/29", "payment card number"),
    ("card", "5500-0000-0000-0004", "payment card number"),
    ("card", "378282246310005", "payment card number"),
    ("anthropic_key", f"key={ANTHROPIC}", "Anthropic API key"),
    ("openai_key", f"OPENAI_API_KEY={OPENAI}", "OpenAI API key"),
    ("aws_key", f"id {AWS_ID}", "AWS access key id"),
    ("github_token", f"token {GITHUB}", "GitHub token"),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "GitHub token"),
    ("slack_token", SLACK, "Slack token"),
    (
        "slack_token",
        "https://hooks.slack.com/services/T0000AAAA/B0000BBBB/XXXXXXXXXXXXXXXXXXXXXXXX",
        "Slack token",
    ),
    ("private_key", PRIVATE_KEY, "private key block"),
    ("bearer_token", BEARER, "bearer token"),
]


def _secret_of(text: str) -> str:
    return text.split("=", 1)[-1].split(" ", 1)[-1] if "=" in text or " " in text else text


@pytest.mark.parametrize(
    ("kind", "text", "label"), HITS, ids=[f"{h[0]}-{i}" for i, h in enumerate(HITS)]
)
def test_each_detector_finds_its_shape_and_blocks(kind, text, label):
    result = run_ladder(entry(description=text), contract())
    assert (result.ok, result.blocked_by, result.payload) == (False, "L3", None)
    assert result.stages_run == ["L3"]
    [finding] = result.findings
    assert finding.stage == "L3" and finding.path == "/description"
    assert finding.message.startswith(f"{label} found: ")


@pytest.mark.parametrize(
    "text",
    [
        "version 1.2.3.4 at 192.168.100.200",
        "order 2024-03-15 10:30, invoice INV-2024-0001",
        "id 1234567890123456",  # 16 digits, not a card prefix
        "4111 1111 1111 1112",  # a card shape that fails Luhn
        "GB82 WEST 1234 5698 7654 33",  # an IBAN shape that fails mod 97
        "000-12-3456 and 666-12-3456",  # SSN areas never issued
        "the bearer of bad news",
        "sk-short",
        "email me @ the office",
        "Total: 1 000 000 EUR",
    ],
)
def test_lookalikes_are_not_reported(text):
    result = run_ladder(entry(description=text), contract())
    assert result.ok, result.findings


def test_checksums():
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert iban_valid("GB82WEST12345698765432") and not iban_valid("GB82WEST12345698765433")


def test_nothing_the_guard_finds_appears_anywhere_in_the_result():
    secrets = [ANTHROPIC, OPENAI, GITHUB, AWS_SECRET, "ada@example.com", "4111 1111 1111 1111"]
    payload = {
        "entry_id": "e-1",
        "client_id": ANTHROPIC,  # also fails nothing else; L4 sees the raw value in report mode
        "hours": OPENAI,  # not a number: L4's message would quote it
        "work_date": "2024-01-01",
        "description": f"{GITHUB} / ada@example.com / 4111 1111 1111 1111",
        "notes": {"aws_secret_access_key": AWS_SECRET},
        GITHUB: "a secret as a field name",
    }
    for mode in ("block", "report"):
        result = run_ladder(payload, contract(), mode=mode)
        dumped = json.dumps(result.model_dump(exclude={"payload"}))
        for secret in secrets:
            assert secret not in dumped, (mode, secret)
        assert "card ending 1111" in dumped and "sk-***" in dumped
        kinds = {f.message.split(" found")[0] for f in result.findings if f.stage == "L3"}
        assert kinds == {
            "Anthropic API key",
            "OpenAI API key",
            "GitHub token",
            "AWS secret access key",
            "email address",
            "payment card number",
        }
    # report mode hands the payload back, every hit redacted (the field name renamed)
    assert result.blocked_by is None and result.payload is not None
    returned = json.dumps(result.payload)
    for secret in secrets:
        assert secret not in returned, secret
    assert result.payload["hours"] == "[REDACTED:openai_key]"
    redactions = {c.path: c.after for c in result.corrections if c.stage == "L3"}
    assert redactions["/notes/aws_secret_access_key"] == "[REDACTED:aws_key]"
    assert "/[REDACTED:github_token]" in redactions  # the field name, renamed
    # L4 ran in report mode on the redacted payload: its type error quotes the placeholder
    l4 = [f for f in result.findings if f.stage == "L4" and f.path == "/hours"]
    assert l4 and "'[REDACTED:openai_key]' is not of type" in l4[0].message


def test_report_mode_keeps_sensitive_payloads_away_from_the_model():
    model = ScriptedModel()
    result = run_ladder(
        entry(description="ada@example.com", hours="x"), contract(), mode="report", model=model
    )
    assert not model.patch_requests and not model.review_requests and not model.embedded
    skipped = {f.stage: f.message for f in result.findings if f.severity == "info"}
    assert "never sent to a model" in skipped["L2"] and "never sent to a model" in skipped["L6"]
    assert result.blocked_by is None and not result.ok


def test_a_secret_in_text_that_does_not_parse_is_still_found():
    result = run_ladder(f'{{"description": "{GITHUB}", ', contract())
    assert result.blocked_by == "L3"
    assert [f.stage for f in result.findings] == ["L3"]
    assert GITHUB not in json.dumps(result.model_dump())


def test_a_secret_in_unparseable_text_in_report_mode_gets_both_errors():
    result = run_ladder(f'{{"description": "{GITHUB}", ', contract(), mode="report")
    assert [f.stage for f in result.findings] == ["L3", "L0"]
    assert result.blocked_by == "L0"


def test_json_escapes_do_not_hide_an_email():
    text = json.dumps(entry(description="ada\\u0040example.com")).replace("\\\\u", "\\u")
    assert "\\u0040" in text
    assert run_ladder(text, contract()).blocked_by == "L3"


def test_redact_replaces_the_match_and_lets_the_run_continue():
    c = contract(guard=GuardConfig(action="redact"))
    result = run_ladder(entry(description="mail ada@example.com or call (415) 555-0132"), c)
    assert result.ok and result.blocked_by is None
    assert result.payload["description"] == "mail [REDACTED:email] or call [REDACTED:phone]"
    assert {f.severity for f in result.findings if f.stage == "L3"} == {"warning"}
    [redaction] = [c for c in result.corrections if c.stage == "L3"]
    assert redaction.op == "replace" and redaction.path == "/description"
    assert "ada@example.com" not in json.dumps(result.model_dump())


def test_detectors_can_be_chosen_and_values_allowed_and_paths_skipped():
    text = "support@forge.local, ada@example.com"
    only_secrets = contract(guard=GuardConfig(detectors=("anthropic_key", "openai_key")))
    assert run_ladder(entry(description=text), only_secrets).ok
    allowing = contract(guard=GuardConfig(allow=("support@forge.local",)))
    [finding] = run_ladder(entry(description=text), allowing).findings
    assert finding.message == "email address found: a***@***.com"
    skipping = contract(guard=GuardConfig(skip_paths=("/description",)))
    assert run_ladder(entry(description=text), skipping).ok


def test_skip_paths_take_a_wildcard_for_array_elements():
    c = contract(
        {"type": "array", "items": {"type": "object"}}, guard=GuardConfig(skip_paths=("/*/email",))
    )
    rows = [{"email": "a@example.com"}, {"email": "b@example.com", "note": "c@example.com"}]
    [finding] = run_ladder(rows, c).findings
    assert finding.path == "/1/note"


def test_field_names_are_scanned_unless_turned_off():
    payload = entry() | {"ada@example.com": 1}
    assert (
        run_ladder(payload, contract())
        .findings[0]
        .message.startswith("email address found in a field name")
    )
    quiet = contract(guard=GuardConfig(scan_keys=False), strip_undeclared=True)
    assert run_ladder(payload, quiet).ok


def test_a_top_level_string_payload_is_scanned():
    c = contract({"type": "string"})
    assert run_ladder(json.dumps(f"token {GITHUB}"), c).blocked_by == "L3"
