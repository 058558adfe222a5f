"""The vendored gitleaks rule set reaches the guard intact, every rule compiles in RE2, and
Forge's changes to it (where a secret ends, checksums) hold."""

import pytest
import re2

from compiler.ladder.secrets.checksums import github_checksum_valid, github_token
from compiler.ladder.secrets.engine import ALL_RULES, SecretScanner, entropy
from compiler.ladder.secrets.mask import mask_text
from tests.ladder.gen_gitleaks import TARGET, render


def test_the_generated_rules_module_is_what_the_vendored_toml_makes():
    assert TARGET.read_text(encoding="utf-8") == render(), (
        "run `.venv/bin/python -m tests.ladder.gen_gitleaks`"
    )


def test_every_rule_compiles_and_ids_are_unique():
    ids = [r.id for r in ALL_RULES]
    assert len(ids) == len(set(ids)) and len(ids) > 200
    for rule in ALL_RULES:
        re2.compile(rule.regex)


def test_entropy_and_keywords_decide_like_gitleaks():
    assert entropy("aaaa") == 0.0 and round(entropy("ab"), 3) == 1.0
    scanner = SecretScanner()
    commit = "8e515c314eeff67387205d6fbdce8654131133ec"
    assert scanner.find(f"commit {commit}") == []  # sourcegraph's bare form needs its keyword
    [(start, end, rule)] = scanner.find(f"sourcegraph token {commit}")
    assert rule == "sourcegraph-access-token" and (start, end) == (18, 58)


def test_spans_are_character_offsets_in_non_ascii_text():
    text = "Grüße — stripe: sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    [(start, end, rule)] = SecretScanner().find(text)
    assert text[start:end] == "sk_live_4eC39HqLyjWDarjtT1zdp7dc" and rule == "stripe-access-token"


def test_a_secret_ends_at_punctuation_in_prose_and_paths():
    """Forge's copy of gitleaks' rules also ends a secret at '.', ',', ':', ')' or '/'."""
    key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    scanner = SecretScanner()
    for text in (f"invalid key {key}.", f"keys/{key}.json", f"({key}), then", f"{key}/x"):
        assert [text[s:e] for s, e, _ in scanner.find(text)] == [key], text
    assert scanner.find(f"{key}_and_more_words") == []  # still no end inside a word


def test_a_github_token_counts_only_with_its_checksum():
    """GitHub's CRC32: a 40-character token whose checksum fails was not issued by GitHub."""
    good = github_token("ghp", "Xq3v9LmT2pR7sK1wZ8yB4nC6dF0gH5")
    bad = good[:-1] + ("A" if good[-1] != "A" else "B")
    assert github_checksum_valid(good) and not github_checksum_valid(bad)
    scanner = SecretScanner()
    assert [rule for _, _, rule in scanner.find(f"token {good}")] == ["github-pat"]
    assert scanner.find(f"token {bad}") == []
    # Forge's own detector (the ladder's and the boundary's) decides the same.
    assert mask_text(f"token {good}")[1] and not mask_text(f"token {bad}")[1]
    for prefix in ("gho", "ghu", "ghs", "ghr"):
        token = github_token(prefix, "Xq3v9LmT2pR7sK1wZ8yB4nC6dF0gH5")
        assert mask_text(token)[1] and not mask_text(token[:-1] + "0")[1] or token[-1] == "0"
    # Forms without a checksum are found by their shape alone.
    longer = "ghs_" + "Xq3v9LmT2pR7sK1wZ8yB4nC6dF0gH5aB7cD9eF1" * 2
    assert github_checksum_valid(longer) and mask_text(longer)[1]


@pytest.mark.parametrize(
    "field",
    [
        "{P}",
        r"{P}\\",
        "{password}",
        r"{password}\\",
        "{cfg.password}",
        "{pw!r}",
        r"{}\\",
        "%s",
        r"%s\\",
        "%(pw)s",
        r"%(password)s\\",
        "${PASS}",
        r"${PASS}\\",
        "$PASS",
        r"{{password}}\\",
        r"<password>\\",
    ],
)
def test_a_connection_url_built_from_format_fields_holds_no_password(field: str) -> None:
    """A program's `…:{P}\\@host` is a template: masking it rewrote the program (issue 33)."""
    for text in (
        f'conn = f"postgresql://{{U}}:{field}@api.example.com/db"',
        f'url = "redis://admin:{field}@cache.internal:6379/0"',
    ):
        assert mask_text(text)[1] == [], text


def test_a_connection_url_with_a_password_is_still_found() -> None:
    for password in ("hunter2Xyz", r"s3cr3tP4ss\\", "{P}abc9Xk2", "%sQz81kfw"):
        text = f'url = "postgresql://app:{password}@db.internal/x"'
        assert [f.detector for f in mask_text(text)[1]] == ["connection-string-password"], text


def test_an_aws_secret_next_to_its_key_id_is_found() -> None:
    """A CSV row, a `key_id:secret` pair or prose: a key id names a 40-character secret near it."""
    key_id, secret = "AKIA" + "QYLPMN5HHHFPZAM2", "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq3vKEY9ab"
    for text in (f"aws-prod,{key_id},{secret}", f'"{key_id}","{secret}"', f"{key_id}\t{secret}"):
        masked, found = mask_text(text)
        assert [f.detector for f in found] == ["aws_key", "aws_secret"], text
        assert key_id not in masked and secret not in masked
    # Alone, or far from a key id, 40 base64 characters are not known to be a secret.
    assert mask_text(f"checksum {secret}")[1] == []
    far = f"{key_id} and, much later in the text, " + "more words " * 10 + secret
    assert [f.detector for f in mask_text(far)[1]] == ["aws_key"]
    # Near it (within 100 characters), in prose: the id names it too.
    near = f"using key {key_id} / {secret}"
    assert [f.detector for f in mask_text(near)[1]] == ["aws_key", "aws_secret"]
