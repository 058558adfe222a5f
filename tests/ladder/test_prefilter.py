"""The RE2 pass before the guard clears nothing the guard finds with the credential detectors."""

import json
import random

import pytest

from compiler.ladder.contract import GuardConfig, LadderContract
from compiler.ladder.guard import scan_document
from compiler.ladder.prefilter import may_hold, may_hold_value, secret_field
from compiler.ladder.secrets.mask import BOUNDARY_DETECTORS
from tests.guard.corpus import benign, samples

CREDENTIALS = LadderContract(
    json_schema={"type": "object"}, guard=GuardConfig(detectors=BOUNDARY_DETECTORS)
)
FOUND = [s for _, s in samples(per_format=4) if scan_document(s, CREDENTIALS)]
PERSONAL = [s for name, s in samples(per_format=2) if name.startswith(("email", "phone", "card"))]


def test_the_corpus_holds_credentials_the_guard_finds():
    assert len(FOUND) >= 250  # every credential format, 4 samples each


@pytest.mark.parametrize("sample", FOUND)
def test_no_credential_the_guard_finds_is_cleared(sample):
    assert may_hold(sample)
    # ... nor among other lines, at the start, in the middle or at the end of a chunk
    lines = benign(20)
    for at in (0, 10, 20):
        assert may_hold("\n".join([*lines[:at], sample, *lines[at:]]))
    assert may_hold_value({"rows": [{"note": s} for s in [*lines, sample]]})


def test_most_ordinary_text_is_cleared():
    ordinary = benign(1200) + PERSONAL
    cleared = [s for s in ordinary if not may_hold(s)]
    # The benign corpus is high-entropy on purpose (commits, digests, blobs): a rule's shape
    # without its entropy or checksum still matches some, which the guard then clears.
    assert len(cleared) >= 0.8 * len(ordinary)
    rng = random.Random(3)
    rows = [
        {"id": i, "email": f"u{i}@example.com", "amount": rng.random(), "note": "paid"}
        for i in range(2000)
    ]
    assert not may_hold_value(rows)


def test_what_only_a_name_or_json_text_reveals_is_never_cleared():
    assert may_hold_value({"password": "hunter2"})
    assert may_hold_value({"aws_secret_access_key": "x"})
    assert may_hold_value([{"payload": json.dumps({"a": 1})}])
    assert may_hold_value({'{"nested": 1}': 1})
    assert not may_hold_value({"token_count": "12", "author": "ada"})
    assert not may_hold_value(12) and not may_hold_value(None) and not may_hold_value([])
    assert secret_field("api_key") and secret_field("AWS_SECRET") and not secret_field("author")


def test_a_secret_under_its_field_reaches_the_guard():
    value = {"config": {"client_secret": "Tr0ub4dor&3xK9#qZ"}}
    assert [d.detector for d in scan_document(value, CREDENTIALS)] == ["secret_field"]
    assert may_hold_value(value)
