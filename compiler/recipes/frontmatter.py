"""YAML frontmatter between `---` lines: the head of recipe/1.0 documents and SKILL.md files."""

import re
from typing import Any

import yaml

_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)


def split_frontmatter(
    text: str, source: str, error: type[ValueError], missing: str
) -> tuple[dict[str, Any], str]:
    """(fields, body) of a document; raises `error` naming `source` (and the YAML line)."""
    text = text.replace("\r\n", "\n")
    m = _FRONT.match(text)
    if not m:
        raise error(f"{source}: {missing}")
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 2}" if mark is not None else ""
        raise error(f"{source}:{where} frontmatter is not valid YAML: {err}") from None
    if not isinstance(front, dict):
        raise error(f"{source}: frontmatter must be a mapping of fields")
    return front, text[m.end() :]
