"""The vendored gitleaks rule set reaches the guard intact, and every rule compiles in RE2."""

import re2

from compiler.ladder.secrets.engine import ALL_RULES, SecretScanner, entropy
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
