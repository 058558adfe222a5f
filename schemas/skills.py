"""Skills (seed 000 §7, seed 004 §4.3): vetted SKILL.md packages with a declared output schema.

A skill is an agentskills.io SKILL.md (frontmatter name and description, a procedure in its body);
Forge reads two keys of its `metadata`: `forge-output-schema` (a JSON Schema file beside it that
every output of an `invoke skill:` step is validated against) and `forge-deprecated`.
"""

from datetime import datetime
from typing import Any, Literal

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


class SkillCandidate(FrozenModel):
    """One skill Pass D discovered for a step: the model may choose only among these."""

    skill_id: str
    score: float = Field(description="lexical evidence from the step contract; pins score too")
    reasons: list[str] = Field(default_factory=list, description="what scored, or why pinned")
    pinned: Literal["required", "preferred"] | None = None
    sha256: str = Field(description="the package digest a binding seals into the contract")


class SkillRegistration(FrozenModel):
    """One version of a skill in a tenant's database registry."""

    tenant_id: str
    skill_id: str
    version: int = Field(ge=1)
    sha256: str = Field(description="of the whole package: SKILL.md, schema and every file")
    deprecated: bool = False
    registered_at: datetime
    registered_by: str
    files: list[str] = Field(default_factory=list, description="package files, relative")
    created: bool = Field(
        default=True, description="False when the same content was already registered"
    )
