"""The guard's goals on its corpus (tests/guard/corpus.py), through `forge guard scan`'s code.

Every format caught, recall >= 95% over >= 60 formats, false positives <= 1% over >= 1,000
benign high-entropy strings and none on Forge's own values; documented examples and obvious
placeholders are allowed.
"""

import pytest

from tests.guard.corpus import FORMATS, benign, forge_values, samples
from workers.cli.guard import scan_text

SAMPLES = samples()


def test_the_corpus_is_as_large_as_the_goals_say():
    assert len(FORMATS) >= 60
    assert len(SAMPLES) >= 3 * len(FORMATS)
    assert len(benign()) >= 1000


def test_every_format_is_caught_and_recall_is_at_least_95_percent():
    missed = [(name, sample) for name, sample in SAMPLES if not scan_text(sample)]
    formats_missed = sorted({name for name, _ in missed})
    assert formats_missed == [], missed[:5]
    assert 1 - len(missed) / len(SAMPLES) >= 0.95


def test_no_sample_is_shown_in_what_is_reported():
    for _name, sample in SAMPLES:
        for found in scan_text(sample):
            secret_parts = [p for p in sample.replace("=", " ").split() if len(p) >= 12]
            assert not any(p in found.masked for p in secret_parts), (sample, found)


def test_false_positives_are_at_most_one_percent_of_benign_strings():
    flagged = [(text, scan_text(text)) for text in benign()]
    flagged = [(t, f) for t, f in flagged if f]
    assert len(flagged) / len(benign()) <= 0.01, flagged[:5]


def test_forges_own_values_never_trip_the_guard():
    tripped = [(v, scan_text(v)) for v in forge_values()]
    assert [(v, f) for v, f in tripped if f] == []


@pytest.mark.parametrize(
    "text",
    [
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "password=changeme",
        "password: <your-password>",
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
        "client_secret = YOUR_CLIENT_SECRET",
        "api_key: ********",
        "token=xxxxxxxxxxxxxxxxxxxx",
    ],
)
def test_documented_examples_and_placeholders_are_allowed(text):
    assert scan_text(text) == []


def test_the_same_credential_is_found_in_json_by_its_pointer():
    doc = '{"services": [{"name": "db", "url": "postgres://app:Zq8vP2mK9xL@db:5432/app"}]}'
    [found] = scan_text(doc)
    assert (found.path, found.detector) == ("/services/0/url", "connection-string-password")
    assert "Zq8vP2mK9xL" not in found.masked
