"""The one gate every recipe passes (seed 004 §5.2): curated, authored, imported or composed.

`validate_spec` takes the dict form of a spec (frontmatter keys in either spelling, `not-when` or
`not_when`) and returns every problem, each naming the field or step and what to do. An empty list
means the spec is safe to persist and to parse back into the same steps.
"""

import re
from typing import Any

from compiler.recipes.directives import DirectiveError, parse_directives
from schemas.recipes import CATEGORIES, SLUG_PATTERN

SAFE_SLUG = re.compile(SLUG_PATTERN)
# The runner splits steps on `### N.`; any numbered heading inside a body would re-parse as a step.
PHANTOM = re.compile(r"^\s{0,3}#{1,6}\s*\d+\s*[.)]", re.MULTILINE)
ALIASES = {
    "not-when": "not_when",
    "loads-in": "loads_in",
    "authoredBy": "authored_by",
    "authored-by": "authored_by",
    "domain-packs": "domain_packs",
    "workflow-packs": "workflow_packs",
    "parallelism-groups": "parallelism_groups",
}
FIELDS = {
    "schema",
    "slug",
    "title",
    "summary",
    "tags",
    "triggers",
    "not_when",
    "composes",
    "loads_in",
    "category",
    "authored_by",
    "owner",
    "domain_packs",
    "workflow_packs",
    "steps",
    "parallelism",
    "parallelism_groups",
    "lineage",
}
AUTHORS = ("curated", "authored", "compose-from-library", "skill-bridge")
LOADS_IN = ("main", "subagent")
MAX_STEPS = 50


def normalize_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Frontmatter spellings folded into field names; `parallelism.groups` into a flat field."""
    out = {ALIASES.get(k, k): v for k, v in spec.items()}
    par = out.pop("parallelism", None)
    if isinstance(par, dict) and "groups" in par and "parallelism_groups" not in out:
        out["parallelism_groups"] = par["groups"]
    elif par is not None and not isinstance(par, dict):
        out["parallelism"] = par  # reported below
    return out


def validate_spec(spec: dict[str, Any]) -> list[str]:
    """Every reason `spec` would make a malformed or unsafe recipe; [] when it is sound."""
    if not isinstance(spec, dict):
        return [f"a recipe spec is a mapping of fields, not {type(spec).__name__}"]
    s = normalize_spec(spec)
    errors: list[str] = []
    for key in sorted(set(s) - FIELDS):
        errors.append(f"unknown field {key!r}: allowed are {', '.join(sorted(FIELDS))}")
    if s.get("schema") not in (None, "recipe/1.0"):
        errors.append(f"schema {s.get('schema')!r} is not recipe/1.0")
    slug = s.get("slug")
    if not isinstance(slug, str) or not SAFE_SLUG.fullmatch(slug):
        errors.append(
            f"slug {slug!r} is unsafe: it is also the on-disk directory name; use 1-64 lower-case "
            "letters, digits and inner hyphens (no slashes, dots or '..')"
        )
    for key in ("title", "summary"):
        value = s.get(key)
        if not isinstance(value, str) or not value.strip():
            errors.append(f"{key} is required (a non-empty line of text)")
        elif "\n" in value.strip():
            errors.append(f"{key} must be a single line")
    errors += _field_problems(s)
    if "parallelism" in s:
        errors.append("parallelism must be a mapping with `groups: [[0], [1, 2], ...]`")
    steps = s.get("steps")
    if not isinstance(steps, list) or not steps:
        errors.append("at least one step is required (### 1. Title, then its body)")
        steps = []
    elif len(steps) > MAX_STEPS:
        errors.append(f"{len(steps)} steps: a recipe has at most {MAX_STEPS}")
    for i, step in enumerate(steps, start=1):
        errors += _step_problems(i, step)
    groups = s.get("parallelism_groups")
    if groups is not None:
        errors += _group_problems(groups, len(steps))
    return errors


def _field_problems(s: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    slug = s.get("slug")
    errors += _string_list(s, "tags", required=True)
    errors += _string_list(s, "triggers")
    errors += _string_list(s, "not_when")
    errors += _string_list(s, "domain_packs")
    errors += _string_list(s, "workflow_packs")
    errors += _string_list(s, "composes")
    for sub in s.get("composes") or []:
        if isinstance(sub, str) and not SAFE_SLUG.fullmatch(sub):
            errors.append(f"composes names {sub!r}, which is not a recipe slug")
        if isinstance(sub, str) and sub == slug:
            errors.append(f"composes names the recipe itself ({sub!r})")
    loads_in = s.get("loads_in")
    if loads_in is not None and (
        not isinstance(loads_in, list) or not loads_in or any(x not in LOADS_IN for x in loads_in)
    ):
        errors.append(f"loads-in {loads_in!r} must be a non-empty list of main and/or subagent")
    category = s.get("category")
    if category is not None and category not in CATEGORIES:
        errors.append(f"category {category!r} is not one of {', '.join(CATEGORIES)}")
    author = s.get("authored_by")
    if author is not None and author not in AUTHORS:
        errors.append(f"authoredBy {author!r} is not one of {', '.join(AUTHORS)}")
    owner = s.get("owner")
    if owner is not None and (not isinstance(owner, str) or not SAFE_SLUG.fullmatch(owner)):
        errors.append(f"owner {owner!r} must be a slug (lower-case letters, digits, hyphens)")
    lineage = s.get("lineage")
    if lineage is not None and not isinstance(lineage, dict):
        errors.append("lineage must be a mapping (e.g. skill: name, query: text)")
    return errors


def _string_list(s: dict[str, Any], key: str, *, required: bool = False) -> list[str]:
    value = s.get(key)
    name = key.replace("_", "-")
    if value is None:
        return [f"{name} is required (else the matcher can never surface it)"] if required else []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        return [f"{name} must be a list of non-empty strings, not {value!r}"]
    if required and not value:
        return [f"{name} is required (else the matcher can never surface it)"]
    return []


def _step_problems(i: int, step: Any) -> list[str]:
    if not isinstance(step, dict):
        return [f"step {i} must be a mapping with title and body"]
    problems: list[str] = []
    for key in sorted(set(step) - {"title", "body", "done_when", "done-when"}):
        problems.append(f"step {i}: unknown field {key!r} (allowed: title, body, done_when)")
    title, body = step.get("title"), step.get("body")
    if not isinstance(title, str) or not title.strip() or not isinstance(body, str):
        problems.append(f"step {i} is incomplete: it needs a title and a body")
        return problems
    if not body.strip() and not (step.get("done_when") or step.get("done-when")):
        problems.append(f"step {i} ({title}) is incomplete: its body is empty")
    if "\n" in title.strip() or PHANTOM.match(title):
        problems.append(f"step {i}: the title must be one line of text, not {title!r}")
    if PHANTOM.search(body):
        problems.append(
            f"step {i} ({title}): its body holds a numbered heading ('### N.'), which would "
            "re-parse as a PHANTOM step; use a plain line or a bullet instead"
        )
    try:
        parse_directives(body)
    except DirectiveError as err:
        problems.append(f"step {i} ({title}): {err}")
    return problems


def _group_problems(groups: Any, n: int) -> list[str]:
    if not isinstance(groups, list) or not all(isinstance(g, list) and g for g in groups):
        return ["parallelism groups must be a list of non-empty lists of step indices"]
    seen: dict[int, int] = {}
    problems: list[str] = []
    for gi, group in enumerate(groups):
        for idx in group:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n:
                problems.append(
                    f"parallelism group {gi} names step index {idx!r}: indices are 0-based, "
                    f"0..{n - 1}"
                )
            elif idx in seen:
                problems.append(
                    f"step index {idx} appears in parallelism groups {seen[idx]} and {gi}: "
                    "each step belongs to exactly one group"
                )
            else:
                seen[idx] = gi
    missing = [i for i in range(n) if i not in seen]
    if missing and not problems:
        problems.append(f"parallelism groups leave out step indices {missing}: cover every step")
    elif missing:
        problems.append(f"parallelism groups leave out step indices {missing}")
    return problems
