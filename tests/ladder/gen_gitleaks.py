"""Write compiler/ladder/secrets/gitleaks_rules.py from the vendored gitleaks.toml.

    .venv/bin/python -m tests.ladder.gen_gitleaks

compiler/ may not read files, so gitleaks' rule set reaches the guard as a generated Python
module; tests/ladder/test_secret_rules.py fails when the module is not what this writes. Rules
that only apply to file paths (`path`) are left out: the guard scans values, not files; an
allow list of paths only is left out for the same reason.
"""

import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2] / "compiler" / "ladder" / "secrets"
SOURCE = HERE / "gitleaks.toml"
TARGET = HERE / "gitleaks_rules.py"
COMMIT = "b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b"

HEADER = f'''"""Gitleaks' default rule set, as data (generated: do not edit).

From config/gitleaks.toml of github.com/gitleaks/gitleaks at {COMMIT[:12]} (vendored
beside this file as gitleaks.toml), written by `python -m tests.ladder.gen_gitleaks`.
Gitleaks is MIT licensed, Copyright (c) 2019 Zachary Rice: see LICENSE-gitleaks beside this file.
"""

# ruff: noqa: E501

from compiler.ladder.secrets.rule import Allow, Rule
'''


def _allow(raw: dict[str, Any]) -> str | None:
    regexes = tuple(raw.get("regexes", ()))
    stopwords = tuple(raw.get("stopwords", ()))
    if not regexes and not stopwords:
        return None  # paths or commits only
    return (
        f"Allow(regexes={regexes!r}, stopwords={stopwords!r}, "
        f"target={raw.get('regexTarget', 'secret')!r}, condition={raw.get('condition', 'OR')!r})"
    )


def render() -> str:
    config = tomllib.loads(SOURCE.read_text(encoding="utf-8"))
    lines = [HEADER, "RULES: tuple[Rule, ...] = ("]
    for rule in config["rules"]:
        if "regex" not in rule or "path" in rule:
            continue
        allows = [a for a in map(_allow, rule.get("allowlists", ())) if a is not None]
        lines.append(
            f"    Rule(id={rule['id']!r}, description={rule['description']!r}, "
            f"regex={rule['regex']!r}, keywords={tuple(rule.get('keywords', ()))!r}, "
            f"entropy={rule.get('entropy')!r}, group={rule.get('secretGroup')!r}, "
            f"allows=({''.join(a + ', ' for a in allows)})),"
        )
    lines.append(")")
    glob = config["allowlist"]
    lines.append(f"GLOBAL_ALLOW = {_allow(glob)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render(), encoding="utf-8")
    print(f"wrote {TARGET}")
