"""recipe/1.0 markdown <-> spec dict <-> Recipe (seed 004 Appendix B).

A document is YAML frontmatter between `---` lines and a body of `### N. Title` steps. Steps are
split on exactly that heading pattern, numbered 1..n; a numbered heading anywhere else (a fence
included) shows up as a break in the numbering and is reported, never run as a phantom step.
"""

import re
from typing import Any

import yaml

from compiler.recipes.directives import parse_directives
from compiler.recipes.frontmatter import split_frontmatter
from compiler.recipes.validate import normalize_spec, validate_spec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.recipes import Recipe, RecipeStep

_STEP = re.compile(r"^###\s+(\d+)\.\s+(.+?)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
MAX_DOCUMENT = 256 * 1024


class RecipeFormatError(ForgeError, ValueError):
    """A document that is not recipe/1.0; the message says where and what to fix."""

    code = ErrorCode.RECIPE_INVALID


def parse_document(text: str, source: str = "<recipe>") -> dict[str, Any]:
    """The spec dict of a recipe document (not yet validated)."""
    if len(text) > MAX_DOCUMENT:
        raise RecipeFormatError(f"{source}: {len(text):,} bytes; a recipe is at most 256 KiB")
    front, body = split_frontmatter(
        text,
        source,
        RecipeFormatError,
        "no frontmatter; a recipe starts with `---`, YAML fields, `---`",
    )
    spec = dict(front)
    if "steps" in spec:
        raise RecipeFormatError(f"{source}: steps belong in the body as `### N. Title`")
    spec["steps"] = _steps(body, source)
    return spec


def _fenced_lines(body: str) -> set[int]:
    """Line numbers inside a ``` or ~~~ fence (the fence lines included)."""
    inside: set[int] = set()
    fence = ""
    for n, line in enumerate(body.split("\n")):
        m = _FENCE.match(line)
        if fence:
            inside.add(n)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
        elif m:
            inside.add(n)
            fence = m.group(1)
    return inside


def _steps(body: str, source: str) -> list[dict[str, str]]:
    heads = list(_STEP.finditer(body))
    fenced = _fenced_lines(body)
    for h in heads:
        if body.count("\n", 0, h.start()) in fenced:
            raise RecipeFormatError(
                f"{source}: `{h.group(0).strip()}` sits inside a code fence; the runner would "
                "split it off as a PHANTOM step: write the example without the `### N.` heading"
            )
    numbers = [int(h.group(1)) for h in heads]
    if numbers != list(range(1, len(heads) + 1)):
        raise RecipeFormatError(
            f"{source}: step headings are numbered {numbers}, not 1..{len(heads)}: a `### N.` "
            "heading inside a step body (a code fence included) would run as a PHANTOM step"
        )
    steps = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        steps.append({"title": head.group(2), "body": body[head.end() : end].strip("\n")})
    return steps


def recipe_from_spec(spec: dict[str, Any], source: str = "") -> Recipe:
    """A validated Recipe; raises RecipeFormatError listing every validation problem."""
    problems = validate_spec(spec)
    if problems:
        raise RecipeFormatError(f"{source or spec.get('slug')}: " + "; ".join(problems))
    s = normalize_spec(spec)
    steps = []
    for i, step in enumerate(s["steps"]):
        body = _with_done_when(step)
        directives, prose = parse_directives(body)
        steps.append(
            RecipeStep(
                index=i, title=step["title"].strip(), body=body, prose=prose, directives=directives
            )
        )
    tags = list(dict.fromkeys([*s["tags"], *(s.get("triggers") or [])]))
    return Recipe(
        slug=s["slug"],
        title=s["title"].strip(),
        summary=s["summary"].strip(),
        tags=tags,
        not_when=list(s.get("not_when") or []),
        composes=list(s.get("composes") or []),
        loads_in=list(s.get("loads_in") or ["main"]),
        authored_by=s.get("authored_by") or "curated",
        owner=s.get("owner") or "forge",
        category=s.get("category") or "general",
        domain_packs=list(s.get("domain_packs") or []),
        workflow_packs=list(s.get("workflow_packs") or []),
        groups=s.get("parallelism_groups") or [[i] for i in range(len(steps))],
        steps=steps,
        source=source,
        lineage={str(k): str(v) for k, v in (s.get("lineage") or {}).items()},
    )


def _with_done_when(step: dict[str, Any]) -> str:
    body = str(step.get("body") or "")
    done = step.get("done_when") or step.get("done-when")
    if done and not re.match(r"^\s*done-when\s*:", body, re.IGNORECASE):
        return f"done-when: {done}\n{body}".rstrip("\n")
    return body


def parse_recipe(text: str, source: str = "<recipe>") -> Recipe:
    """Parse and validate one recipe document."""
    return recipe_from_spec(parse_document(text, source), source)


def render_document(spec: dict[str, Any]) -> str:
    """The recipe/1.0 markdown for a validated spec; parse_recipe(render(spec)) gives it back."""
    s = normalize_spec(spec)
    front: dict[str, Any] = {"schema": "recipe/1.0", "slug": s["slug"], "title": s["title"]}
    front["summary"] = s["summary"]
    front["tags"] = list(dict.fromkeys([*s["tags"], *(s.get("triggers") or [])]))
    for key, name in (
        ("not_when", "not-when"),
        ("composes", "composes"),
        ("loads_in", "loads-in"),
        ("authored_by", "authoredBy"),
        ("owner", "owner"),
        ("category", "category"),
        ("domain_packs", "domain-packs"),
        ("workflow_packs", "workflow-packs"),
        ("lineage", "lineage"),
    ):
        if s.get(key) not in (None, [], {}):
            front[name] = s[key]
    if s.get("parallelism_groups"):
        front["parallelism"] = {"groups": s["parallelism_groups"]}
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    parts = [f"---\n{head}---\n"]
    for i, step in enumerate(s["steps"], start=1):
        parts.append(f"### {i}. {step['title'].strip()}\n{_with_done_when(step).strip()}\n")
    return "\n".join(parts)
