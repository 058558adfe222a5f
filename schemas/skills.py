"""Skills (seed 000 §7, seed 004 §4.3): vetted SKILL.md packages with a declared output schema.

A skill is an agentskills.io SKILL.md (frontmatter name and description, a procedure in its body);
Forge reads two keys of its `metadata`: `forge-output-schema` (a JSON Schema file beside it that
every output of an `invoke skill:` step is validated against) and `forge-deprecated`.
"""

from typing import Any

from pydantic import Field

from schemas.base import FrozenModel


class SkillPackage(FrozenModel):
    skill_id: str
    description: str
    instructions: str = Field(description="the SKILL.md body: the procedure a step follows")
    output_schema: dict[str, Any] | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    deprecated: bool = False
    license: str | None = None
    files: list[str] = Field(default_factory=list, description="package files, relative")
    sha256: str = Field(description="of SKILL.md and the output schema, as read")
    source: str = ""
