"""The SKILL.md bridge (seed 004 §11.3): an agentskills.io skill transpiled into a recipe spec.

A skill documents a capability, not always a procedure, so the step list is inferred: numbered
items under a Workflow/Steps/Procedure/Instructions heading, else `Step N` headings, else one step
per `##` section, else one step for the whole body. The spec then goes through the same validator
as every other recipe; imported content is low trust (authoredBy skill-bridge) and may not open a
step with a directive (an imported skill cannot call a recipe or loop).
"""

import re
from typing import Any

from compiler.recipes.directives import leading_directive_lines
from compiler.recipes.frontmatter import split_frontmatter
from compiler.recipes.text import tokens
from compiler.recipes.validate import validate_spec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.recipes import RecipeSpec, RecipeStepSpec

NAME = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?!-)){0,63}$")
FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
# A numbered heading is not a section: left in a body, the validator reports it as a phantom step.
_SECTION = re.compile(r"^(#{2,3})\s+(?!\d+\s*[.)])(.+?)\s*$", re.MULTILINE)
_PROCEDURE = re.compile(r"workflow|steps|procedure|instructions|how to use|process", re.I)
_STEP_HEAD = re.compile(r"^#{2,4}\s+step\s+(\d+)\s*[:.)-]?\s*(.*?)\s*$", re.MULTILINE | re.I)
_ITEM = re.compile(r"^(\d+)[.)]\s+(.*)$")
MAX_SKILL = 256 * 1024
MAX_TITLE = 72


class RecipeImportError(ForgeError, ValueError):
    """A skill that cannot become a recipe; the message says why (nothing was written)."""

    code = ErrorCode.RECIPE_IMPORT_REFUSED


def transpile_skill(text: str, dirname: str, source: str = "SKILL.md") -> RecipeSpec:
    """The recipe spec for one SKILL.md; raises RecipeImportError with every reason."""
    if len(text) > MAX_SKILL:
        raise RecipeImportError(f"{source}: {len(text):,} bytes; a SKILL.md is at most 256 KiB")
    front, body = _frontmatter(text.replace("\r\n", "\n"), source)
    name, description = front.get("name"), front.get("description")
    problems = [f"unknown frontmatter field {k!r}" for k in sorted(set(front) - FIELDS)]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        problems.append(f"name {name!r} must be 1-64 lower-case letters, digits and single hyphens")
    elif name != dirname:
        problems.append(f"name {name!r} must equal its directory name {dirname!r}")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is required (what the skill does and when to use it)")
    elif len(description) > 1024:
        problems.append("description is longer than 1024 characters")
    metadata = front.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values())
    ):
        problems.append("metadata must map keys to strings")
    tools = front.get("allowed-tools")
    if tools is not None and not isinstance(tools, str):
        problems.append("allowed-tools must be a space-separated string")
    if problems:
        raise RecipeImportError(f"{source}: " + "; ".join(problems))
    assert isinstance(name, str) and isinstance(description, str)
    steps = _infer_steps(body, name)
    for i, step in enumerate(steps, start=1):
        found, _ = leading_directive_lines(step.body)
        if found:
            key, value = found[0]
            raise RecipeImportError(
                f"{source}: step {i} ({step.title}) opens with the directive `{key}: {value}`; "
                "an imported skill may not call recipes, loop or invoke skills"
            )
    summary = " ".join(description.split())
    first = re.split(r"(?<=[.!?])\s", summary, maxsplit=1)[0]
    tags = list(dict.fromkeys([*name.split("-"), *tokens(first)]))[:12]
    lineage = {"skill": name, "source": source}
    if isinstance(front.get("license"), str):
        lineage["license"] = front["license"]
    if tools:
        lineage["allowed-tools"] = tools
    spec = RecipeSpec(
        slug=name,
        title=name.replace("-", " ").capitalize(),
        summary=first[:300],
        tags=[t for t in tags if len(t) > 1],
        category="general",
        owner="skills",
        authored_by="skill-bridge",
        steps=steps,
        lineage=lineage,
    )
    problems = validate_spec(spec_dict(spec))
    if problems:
        raise RecipeImportError(
            f"{source}: the transpiled recipe is invalid: " + "; ".join(problems)
        )
    return spec


def spec_dict(spec: RecipeSpec) -> dict[str, Any]:
    """The dict form validate_spec and author take (unset optional fields left out)."""
    return spec.model_dump(exclude_none=True)


def _frontmatter(text: str, source: str) -> tuple[dict[str, Any], str]:
    return split_frontmatter(
        text, source, RecipeImportError, "no YAML frontmatter (a SKILL.md starts with `---`)"
    )


def _infer_steps(body: str, name: str) -> list[RecipeStepSpec]:
    heads = list(_STEP_HEAD.finditer(body))
    if heads:
        return [
            RecipeStepSpec(
                title=h.group(2) or f"Step {h.group(1)}",
                body=body[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)]
                .strip("\n")
                .strip(),
            )
            for i, h in enumerate(heads)
        ]
    sections = _sections(body)
    for title, text in sections:
        if _PROCEDURE.search(title):
            items = _numbered_items(text)
            if len(items) >= 2:
                return items
    if len(sections) >= 2:
        return [RecipeStepSpec(title=t, body=b.strip() or t) for t, b in sections if b.strip()]
    text = body.strip() or name
    return [RecipeStepSpec(title=f"Apply {name.replace('-', ' ')}", body=text)]


def _sections(body: str) -> list[tuple[str, str]]:
    heads = list(_SECTION.finditer(body))
    return [
        (h.group(2), body[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)])
        for i, h in enumerate(heads)
    ]


def _numbered_items(text: str) -> list[RecipeStepSpec]:
    items: list[list[str]] = []
    for line in text.split("\n"):
        m = _ITEM.match(line.strip())
        if m and not line.startswith((" ", "\t")):
            items.append([m.group(2)])
        elif items and line.strip():
            items[-1].append(line.strip())
    return [
        RecipeStepSpec(title=_title(lines[0]) or lines[0][:MAX_TITLE], body="\n".join(lines))
        for lines in items
    ]


def _title(head: str) -> str:
    """The item's first sentence; a long one is cut at its first clause, else between words."""
    title = re.split(r"(?<=[.:!?])\s", head, maxsplit=1)[0].rstrip(".:").strip("*_ ")
    if len(title) > MAX_TITLE:
        clause = re.split(r"[,;]\s|\s[-\u2014]\s", title, maxsplit=1)[0]
        title = clause if len(clause) <= MAX_TITLE else title[: MAX_TITLE + 1].rsplit(" ", 1)[0]
    return title
