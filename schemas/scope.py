"""Scope: the tenant, project and actor every run, step, call and event belongs to.

The default tenant and project (`DEFAULT_TENANT`, `DEFAULT_PROJECT`) are spelled once, in
`schemas.scope_ids` (pydantic-free, for the CLI's start), and re-exported here.

Serialised form. A model that carries a scope writes the new shape, `{"scope": {"tenant": ...,
"project": ..., "actor": {...}}}`. It still reads the shape written before Scope existed, flat
`tenant_id` / `project_id` (and, for an event, `actor`) fields, through `legacy_scope`, a
`model_validator(mode="before")` every such model shares: Temporal histories recorded with the
old shape replay unchanged, and an old client's JSON still parses. A worker of the old version
cannot read the new shape, so workers are upgraded by draining, not side by side.

The event store is the exception on purpose: its rows keep the seed-001 envelope columns
(`tenant_id`, `project_id`, `actor`) and an event's content hash is computed over that flat
envelope (activities/store/records.py), so every hash already stored still verifies.
"""

import hashlib
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import StringConstraints, model_validator

from schemas.base import FrozenModel
from schemas.scope_ids import DEFAULT_PROJECT, DEFAULT_TENANT, SCOPE_ID_PATTERN

__all__ = [
    "DEFAULT_PROJECT",
    "DEFAULT_TENANT",
    "SCOPE_ID_PATTERN",
    "SYSTEM_ACTOR",
    "Actor",
    "ActorKind",
    "Scope",
    "RunScoped",
    "ScopeId",
    "Scoped",
    "legacy_scope",
    "tenant_tag",
]

ActorKind = Literal["human", "agent", "system"]

# The pattern's reasons are in schemas.scope_ids.
ScopeId = Annotated[str, StringConstraints(pattern=SCOPE_ID_PATTERN)]


class Actor(FrozenModel):
    """Who acted: a person, an agent or the platform itself."""

    id: str
    name: str
    role: str
    kind: ActorKind


SYSTEM_ACTOR = Actor(id="forge", name="Forge", role="platform", kind="system")


class Scope(FrozenModel):
    """Whose work this is: the tenant (the isolation boundary), the project and the actor."""

    tenant: ScopeId = DEFAULT_TENANT
    project: ScopeId = DEFAULT_PROJECT
    actor: Actor = SYSTEM_ACTOR

    @classmethod
    def default(cls) -> Self:
        """The single-tenant scope: the default tenant and project, acted on by Forge."""
        return cls()

    @classmethod
    def of_tenant(cls, tenant: str, *, actor: Actor = SYSTEM_ACTOR) -> Self:
        """A tenant-wide scope (skills, artifacts): the tenant's default project.

        Raises:
            pydantic.ValidationError: `tenant` is not a valid scope id.
        """
        return cls(tenant=tenant, actor=actor)

    def acting(self, actor: Actor) -> "Scope":
        """The same tenant and project, acted on by `actor`."""
        return self if actor == self.actor else self.model_copy(update={"actor": actor})


_LEGACY_FIELDS = ("tenant_id", "project_id")


def legacy_scope(data: Any, *, with_actor: bool = False) -> Any:
    """A payload in the shape before Scope (flat `tenant_id`/`project_id`) as the new shape.

    Call it from a `model_validator(mode="before")`. Anything that is not a dict, or already
    has a `scope`, passes through unchanged; a dict with both shapes is left for validation to
    refuse (extra fields are forbidden), never silently merged. `with_actor` also moves a flat
    `actor` (the event envelope) into the scope.
    """
    if not isinstance(data, dict):
        return data
    moved = (*_LEGACY_FIELDS, "actor") if with_actor else _LEGACY_FIELDS
    if "scope" in data or not any(name in data for name in moved):
        return data
    rest = {k: v for k, v in data.items() if k not in moved}
    scope: dict[str, Any] = {}
    if "tenant_id" in data:
        scope["tenant"] = data["tenant_id"]
    if "project_id" in data:
        scope["project"] = data["project_id"]
    if with_actor and "actor" in data:
        scope["actor"] = data["actor"]
    return {**rest, "scope": scope}


class Scoped(FrozenModel):
    """A model that belongs to a scope; it reads the flat shape written before Scope too.

    Subclasses declare `scope: Scope` themselves: required for what only Forge builds (activity
    inputs), defaulted to `Scope.default()` where a person or an old client may leave it out.
    """

    _legacy_actor: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _read_legacy_scope(cls, data: Any) -> Any:
        return legacy_scope(data, with_actor=cls._legacy_actor)


class RunScoped(Scoped):
    """The input of an activity that acts for one run, in the run's scope.

    The run workflow builds these through one helper (workflows/runlog.RunLog.call), which
    fills in the run's id and scope, so no call site spells them out.
    """

    run_id: str
    scope: Scope


def tenant_tag(tenant: str) -> str:
    """'' for the default tenant, else `-t` and 8 hex digits of its id.

    Appended to the ids of a tenant's workflows (runs, scheduled runs, schedules' workflows), so
    an id says whose it is without spelling the tenant's name, and two tenants never share one.
    """
    if tenant == DEFAULT_TENANT:
        return ""
    return "-t" + hashlib.sha256(tenant.encode()).hexdigest()[:8]
