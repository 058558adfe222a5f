"""Skill packages for `invoke skill:` and compose-from-library (seed 004 §4.3, §5.1).

`skill_package` reads one SKILL.md (and its declared output schema) into a SkillPackage;
`compose_from_library` wires the skills that match an objective into a recipe spec of
`invoke skill:` steps, deterministically (no model), for the authoring validator and persistence.
"""

import json
import re
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from compiler.hashing import sha256_text
from compiler.recipes.library import RecipeLibrary
from compiler.recipes.skills import NAME, RecipeImportError, _frontmatter
from compiler.recipes.text import tokens
from schemas.recipes import Recipe, RecipeSpec, RecipeStep, RecipeStepSpec
from schemas.skills import SkillPackage

OUTPUT_SCHEMA_KEY = "forge-output-schema"
DEPRECATED_KEY = "forge-deprecated"
MAX_COMPOSED = 5


def skill_package(
    text: str,
    dirname: str,
    *,
    read_file: Callable[[str], str | None],
    files: list[str],
    source: str,
) -> SkillPackage:
    """One skill; raises RecipeImportError naming the file and the problem.

    `read_file(name)` returns a file beside SKILL.md (the output schema), or None if absent.
    """
    front, body = _frontmatter(text.replace("\r\n", "\n"), source)
    name, description = front.get("name"), front.get("description")
    if not isinstance(name, str) or not NAME.match(name) or name != dirname:
        raise RecipeImportError(
            f"{source}: name {name!r} must be lower-case-hyphenated and equal its directory"
        )
    if not isinstance(description, str) or not description.strip():
        raise RecipeImportError(f"{source}: description is required")
    metadata = front.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RecipeImportError(f"{source}: metadata must map keys to strings")
    schema: dict[str, Any] | None = None
    schema_text: str | None = None
    schema_name = metadata.get(OUTPUT_SCHEMA_KEY)
    if schema_name:
        if not isinstance(schema_name, str) or "/" in schema_name or schema_name in (".", ".."):
            raise RecipeImportError(
                f"{source}: metadata.{OUTPUT_SCHEMA_KEY} {schema_name!r} must name a file "
                "beside SKILL.md"
            )
        schema_text = read_file(schema_name)
        if schema_text is None:
            raise RecipeImportError(
                f"{source}: metadata.{OUTPUT_SCHEMA_KEY} names {metadata[OUTPUT_SCHEMA_KEY]!r}, "
                "which is not beside SKILL.md"
            )
        try:
            loaded = json.loads(schema_text)
            Draft202012Validator.check_schema(loaded)
        except (ValueError, SchemaError) as err:
            raise RecipeImportError(
                f"{source}: output schema {metadata[OUTPUT_SCHEMA_KEY]} is not a valid JSON "
                f"Schema: {str(err).splitlines()[0]}"
            ) from None
        if not isinstance(loaded, dict):
            raise RecipeImportError(f"{source}: the output schema must be a JSON object")
        schema = loaded
    tools = front.get("allowed-tools")
    return SkillPackage(
        skill_id=name,
        description=" ".join(description.split()),
        instructions=body.strip(),
        output_schema=schema,
        allowed_tools=tools.split() if isinstance(tools, str) else [],
        deprecated=str(metadata.get(DEPRECATED_KEY, "")).lower() in ("true", "yes", "1"),
        license=front.get("license") if isinstance(front.get("license"), str) else None,
        files=sorted(files),
        sha256=sha256_text(text + "\n" + (schema_text or "")),
        source=source,
    )


def skill_recipe_library(skills: dict[str, SkillPackage]) -> RecipeLibrary:
    """The skills as matchable entries: the same scorer searches recipes and skills."""
    entries = []
    for skill in skills.values():
        if skill.deprecated:
            continue
        words = skill.skill_id.split("-")
        entries.append(
            Recipe(
                slug=skill.skill_id,
                title=" ".join(words),
                summary=skill.description[:300],
                tags=words,
                steps=[RecipeStep(index=0, title=skill.skill_id, body="", prose=skill.description)],
                owner="skills",
                source=skill.source,
            )
        )
    return RecipeLibrary(entries)


_NON_SLUG = re.compile(r"[^a-z0-9]+")


def compose_from_library(
    objective: str, skills: dict[str, SkillPackage], *, threshold: float | None = None
) -> RecipeSpec | None:
    """COMPOSE-FROM-LIBRARY (seed 004 §5.1): one `invoke skill:` step per matching skill.

    Steps follow the skills' rank; None when no skill matches. The spec still goes through
    validate_spec and author.
    """
    found = skill_recipe_library(skills).match(objective, threshold=threshold)
    hits = [m.slug for m in found.matches[:MAX_COMPOSED]]
    if not hits:
        return None
    words = [t for t in tokens(objective) if len(t) > 2][:5]
    slug = _NON_SLUG.sub("-", "-".join(["composed", *words]).lower()).strip("-")[:60].strip("-")
    steps = [
        RecipeStepSpec(
            title=f"Invoke {skill_id}",
            body=f"invoke skill: {skill_id}\n{skills[skill_id].description}",
            done_when=f"the {skill_id} output validates against its schema",
        )
        for skill_id in hits
    ]
    summary = " ".join(objective.split())
    return RecipeSpec(
        slug=slug,
        title=f"Composed: {' '.join(words) or slug}"[:80],
        summary=summary[:200],
        tags=list(dict.fromkeys(words)) or [slug],
        category="general",
        owner="local",
        authored_by="compose-from-library",
        steps=steps,
        lineage={"query": summary[:200], "skills": ",".join(hits)},
    )
