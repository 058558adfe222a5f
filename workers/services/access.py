"""Authorization: who acts, for which tenant, in which role; the one check every verb passes.

A request to the HTTP API acts as its key (`of_key`); a CLI command acts locally as the
tenant's administrator (`local`). Both reach `authorize` before they touch anything, so the CLI
goes through the same rule as the API, never around it.
"""

from dataclasses import dataclass

from schemas.access import DOES, GRANTS, ApiKey, Permission, Role, least_role
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import DEFAULT_PROJECT, SYSTEM_ACTOR, Actor, Scope
from schemas.spelling import Named, Spelled, literal

__all__ = ["Principal", "authorize", "local", "of_key"]


@dataclass(frozen=True)
class Principal:
    """Who acts: the tenant, the role, the actor its events carry, the gate roles it holds."""

    tenant: str
    role: Role
    actor: Actor
    gate_roles: frozenset[str] | None  # None: any gate role (the local administrator)
    key_id: str | None = None

    def scope(self, project: str = DEFAULT_PROJECT) -> Scope:
        """The scope its work is done in: its tenant, acted on by its actor."""
        return Scope(tenant=self.tenant, project=project, actor=self.actor)

    def may_decide_as(self, gate_role: str) -> bool:
        """Whether it may decide a gate that waits for `gate_role`."""
        return self.gate_roles is None or gate_role in self.gate_roles


def authorize(principal: Principal, permission: Permission) -> None:
    """Pass, or raise FORBIDDEN naming the least role that may do it."""
    if permission not in GRANTS[principal.role]:
        needed = least_role(permission)
        why = (
            f"role {principal.role!r} may not {DOES[permission]} ({permission}); it needs role "
            f"{needed!r} or higher"
        )
        make = Named(
            "action", f"forge keys create --role {needed}", "an admin makes one: POST /v1/keys"
        )
        raise ForgeError(why, code=ErrorCode.FORBIDDEN).spell(
            Spelled(literal(why)),
            Spelled(f"use a key with role {literal(needed)} ({{0}})", (make,)),
        )


def of_key(key: ApiKey) -> Principal:
    """The principal a live API key acts as."""
    return Principal(key.tenant_id, key.role, key.actor, frozenset(key.gate_roles), key.key_id)


def local(tenant: str, actor: Actor = SYSTEM_ACTOR) -> Principal:
    """The CLI on this machine: the tenant's administrator, deciding in any gate role."""
    return Principal(tenant, "admin", actor, None)
