"""Redaction: the required-literal shortcut never changes what a rule does to a text."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.context import ContextError
from compiler.context.redaction import REDACTED, redact, redactors, required_literals
from tests.compiler.context.build import pack

STDLIB_RULES = [
    r"(?i)\b(?:api[_-]?key|secret|token|password)\s*[:=]\s*\S+",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bsk-[A-Za-z0-9_-]{20,}\b",
    r"\b\d{3}-\d{2}-\d{4}\b",
]
TRICKY_RULES = [
    *STDLIB_RULES,
    r"(?i)kelvin\d",  # U+212A KELVIN SIGN folds onto k
    r"(?i)secret\d",  # so does U+017F LONG S onto s, though "ſ".lower() is "ſ"
    r"(?i)ſecret",  # a non-ASCII literal under IGNORECASE: no shortcut
    r"(?i:ab)cd",  # scoped flag: only "cd" is verbatim
    r"ab?c",  # a repeat splits the run
    r"abc|abd",  # a common prefix the parser factors out of the branch
    r"foo|bar\d",
    r"foo|",  # one branch has no literal: no shortcut
    r"^key=\w+$",
    r"(?m)^key=\w+$",
    r"(?x) se cr et",
    r"(?<=x)yz",
    r"\w+@\w+\.com",
    r"(a)b\1",
]


def test_required_literals_of_the_stdlib_rules():
    assert required_literals(STDLIB_RULES[0]) == (("api", "secret", "token", "password"), True)
    assert required_literals(STDLIB_RULES[1]) == (("AKIA",), False)
    assert required_literals(STDLIB_RULES[2]) == (("sk-",), False)
    assert required_literals(STDLIB_RULES[3]) == (("-",), False)
    assert required_literals(r"(?i)ſecret") == ((), False)
    assert required_literals(r"(?i:ab)cd") == (("cd",), False)
    assert required_literals(r"foo|") == ((), False)
    assert required_literals(r"\d+") == ((), False)


def _naive(text: str, rules: list[str]) -> str:
    for rule in rules:
        text = re.sub(rule, REDACTED, text)
    return text


# texts made of pieces the rules look for, in every case, with the characters Unicode case
# folding maps onto ASCII letters, so any shortcut that is not exact shows up as a difference
PIECES = [
    "api_key: v",
    "API-KEY=x",
    "Secret = s3",
    "token:t",
    "PassWord: p",
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "akia",
    "sk-" + "a" * 20,
    "123-45-6789",
    "\u212aelvin1",
    "kelvin2",
    "\u017fecret",
    "\u017fecret1",
    "\u017fecret: x",
    "PASSWORD=\u0131",
    "tok\u0130n: y",
    "secret",
    "ABcd",
    "abcd",
    "ac",
    "abd",
    "bar1",
    "foo",
    "key=v",
    "\nkey=w\n",
    "se cr et",
    "xyz",
    "me@host.com",
    "aba",
    " ",
    "\n",
    "é",
    ",",
]


@given(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.lists(st.sampled_from(TRICKY_RULES), min_size=1, max_size=4, unique=True),
)
def test_redact_with_the_shortcut_equals_running_every_rule(text, rules):
    compiled = redactors(pack(redaction_rules=rules))
    assert redact(text, compiled) == _naive(text, rules)


def test_the_compiled_rules_are_cached_per_rule_list():
    rules = [r"\bAKIA[0-9A-Z]{16}\b"]
    assert redactors(pack(redaction_rules=rules)) is redactors(pack(redaction_rules=list(rules)))


def test_an_invalid_rule_is_a_context_error_naming_it():
    with pytest.raises(ContextError) as err:
        redactors(pack(redaction_rules=[r"ok", r"(unclosed"]))
    assert err.value.code == "CONTEXT_PACK_INVALID"
    assert "redaction_rules[1] '(unclosed'" in str(err.value)
