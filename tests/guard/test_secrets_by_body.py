"""Secrets found by their body: a key without its BEGIN line, a wrapped JWT, an AWS secret.

Text can reach Forge already cut (a sandbox's stderr kept as its last bytes, a failure kept
as its last lines) or wrapped by a log; what names a secret may then be gone or split.
"""

import base64
import hashlib
import json
import random
import uuid

import pytest

from compiler.ladder.detectors import aws_secrets_by_ids
from compiler.ladder.guard import scan_document
from compiler.ladder.secrets.jwts import jwt_spans
from compiler.ladder.secrets.mask import mask_text
from compiler.ladder.secrets.pem import bare_runs, tails
from tests.guard.corpus import InContext, ec_der, jwt, jwt_rs256, pem, rsa_der, wrap
from tests.guard.test_clip_property import shown
from tests.support.timeouts import SLOW_INPUT_TIMEOUT_S

RNG = random.Random(33)
KEY = pem("RSA PRIVATE KEY", rsa_der(RNG))
LINES = KEY.splitlines()
BODY = "\n".join(LINES[1:-1])
END = LINES[-1]
HS256 = jwt(RNG)
RS256 = jwt_rs256(RNG)
AWS_ID, AWS_SECRET = "AKIAZ7Q3M4N5P6R2S8T4", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8KEYab3x"


def masked(text: str) -> str:
    return mask_text(text)[0]


@pytest.mark.parametrize(
    "tail",
    [
        "\n".join(LINES[-8:])[25:],  # the text starts mid-line
        "stderr (last 600 bytes): " + "\n".join(LINES[-8:])[25:],
        "\n".join("    " + line for line in LINES[-8:]),  # indented, as in YAML
        json.dumps({"stderr": "\n".join(LINES[-8:])[25:]}),  # escaped line breaks
        "\r\n".join(LINES[-8:])[30:],
    ],
)
def test_a_key_without_its_begin_line_is_masked_up_to_its_end_line(tail):
    out = masked(tail)
    assert "[REDACTED:private_key]" in out and "-----END" not in out
    assert shown(out, BODY) == []


def test_prose_before_a_key_tail_is_kept():
    out = masked("the step failed; here is the key\n" + "\n".join(LINES[-5:]) + "\nexit 1")
    assert out == "the step failed; here is the key\n[REDACTED:private_key]\nexit 1"


@pytest.mark.parametrize("width", [64, 70, 76])
def test_a_run_of_key_lines_with_neither_armour_line_is_masked(width):
    body = wrap(base64.b64encode(RNG.randbytes(600)).decode(), width)
    cut = body[width // 2 : -width // 2].strip()  # cut on both sides
    out = masked("...last lines:\n" + cut + "\n[truncated]")
    assert out == "...last lines:\n[REDACTED:private_key]\n[truncated]"


def test_an_ec_key_cut_to_its_last_lines_is_masked():
    lines = pem("EC PRIVATE KEY", ec_der(RNG)).splitlines()
    tail = "\n".join(lines[-3:])
    assert masked(tail) == "[REDACTED:private_key]"


BENIGN = [
    "blob:\n" + base64.b64encode(RNG.randbytes(48)).decode() + "\nend",  # one 64-wide line
    "\n".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(6)),
    "\n".join(hashlib.sha256(str(i).encode()).hexdigest().upper() for i in range(6)),
    "\n".join(str(uuid.UUID(int=RNG.getrandbits(128))) for _ in range(6)),
    json.dumps({"rows": [{"id": i, "sha256": "ab" * 32} for i in range(4)]}, indent=2),
    wrap(base64.b64encode(RNG.randbytes(300)).decode(), 60),  # wrapped, but not at PEM's width
    "-----BEGIN CERTIFICATE-----\n" + BODY + "\n-----END CERTIFICATE-----",
    BODY[100:] + "\n-----END CERTIFICATE-----",  # a certificate's tail: public
    'Traceback (most recent call last):\n  File "/srv/app/x.py", line 3, in <module>\n'
    "    main()\nValueError: bad input",
    "they say the key is eye-level; obey the keyboard layout.\n" * 3,
]


@pytest.mark.parametrize("text", BENIGN)
def test_base64_digests_ids_and_prose_that_are_no_secret_are_kept(text):
    assert mask_text(text) == (text, [])


def test_the_guard_finds_a_key_tail_but_takes_no_bare_run_for_a_key():
    """The guard sees whole payloads, where a bare run is more likely an attachment."""
    tail = "\n".join(LINES[-6:])
    assert [d.detector for d in scan_document({"log": tail})] == ["private_key"]
    assert scan_document({"log": "\n".join(LINES[3:9])}) == []


def test_a_wrapped_jwt_is_masked_whole_and_the_next_log_line_is_kept():
    for token in (HS256, RS256):
        text = "token:\n" + wrap(token, 50) + "\nINFO request done"
        assert masked(text) == "token:\n[REDACTED:jwt]\nINFO request done"
        assert [d.detector for d in scan_document({"log": text})] == ["jwt"]


def test_a_jwt_on_one_line_is_found_as_before():
    assert masked(f"Authorization: Bearer {HS256}") == "Authorization: [REDACTED:bearer_token]"
    assert masked(f"session={HS256}") == "session=[REDACTED:jwt]"


@pytest.mark.parametrize("at", [12, 30, 60, 140])
def test_the_first_part_of_a_jwt_cut_before_masking_is_masked(at):
    text = "response:\n" + wrap(RS256, 76)
    assert masked(text[: 10 + at]) == "response:\n[REDACTED:jwt]"


def test_the_last_part_of_a_jwt_cut_inside_its_header_or_claims_is_masked():
    text = wrap(RS256, 76)
    first, second = text.index("."), text.index(".", text.index(".") + 1)
    for at in (5, first, first + 1, first + 7, second - 20, second - 1, second):
        assert shown(masked(text[at:]), RS256) == [], at


def test_an_aws_secret_next_to_its_key_id_is_masked():
    out, found = mask_text(f'log.note("using key {AWS_ID} / {AWS_SECRET}")')
    assert out == 'log.note("using key [REDACTED:aws_key] / [REDACTED:aws_key]")'
    assert [f.detector for f in found] == ["aws_key", "aws_secret"]
    assert masked(f"{AWS_SECRET} is the secret of {AWS_ID}") == (
        "[REDACTED:aws_key] is the secret of [REDACTED:aws_key]"
    )


@pytest.mark.parametrize(
    "text",
    [
        "AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS's docs
        f"{AWS_ID} at commit {hashlib.sha1(b'x').hexdigest()}",  # hex: a commit
        f"{AWS_ID} {'and so on ' * 12}{AWS_SECRET}",  # too far apart to be a pair
        f"{AWS_ID} path src/compiler/ladder/secrets/detectorsfile",  # one case only
    ],
)
def test_a_40_character_token_that_is_no_aws_secret_is_kept(text):
    assert "aws_secret" not in [f.detector for f in mask_text(text)[1]]


def test_every_multiline_sample_names_its_secret():
    assert InContext("a {} b", lambda r: "x").secret("a x b") == "x"


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_adversarial_text_is_scanned_in_linear_time():
    b64 = base64.b64encode(RNG.randbytes(750_000)).decode()
    texts = [
        wrap(b64, 64),
        "-----END RSA PRIVATE KEY-----\n" * 30_000,
        ".".join(b64[i : i + 40] for i in range(0, len(b64), 40)),
        "eyJhbGciOiJIUzI1NiJ9 " * 40_000,
        (HS256 + " ") * 8_000,
        (AWS_ID + " " + AWS_SECRET[:30]) * 16_000,
    ]
    for text in texts:
        tails(text, [])
        bare_runs(text)
        jwt_spans(text, cut=True)
        aws_secrets_by_ids(text)
