"""Who may do what (issue 19): tenants, API keys, roles and the permissions each role holds.

Every request to the HTTP API is made with a key; every CLI command acts locally as the tenant's
administrator. Both reach the same `authorize` (workers/services/access.py) with a Principal: the
tenant it acts for, its role, and the actor its events carry.
"""

from typing import Literal

from pydantic import AwareDatetime, Field

from schemas.base import FrozenModel
from schemas.scope import Actor, ScopeId

__all__ = [
    "DOES",
    "GRANTS",
    "PERMISSIONS",
    "ROLES",
    "ApiKey",
    "IssuedKey",
    "Permission",
    "Role",
    "Tenant",
    "least_role",
]

Role = Literal["admin", "operator", "approver", "viewer"]
ROLES: tuple[Role, ...] = ("viewer", "approver", "operator", "admin")  # least to most

Permission = Literal[
    "runs.read",
    "runs.start",
    "runs.cancel",
    "capsules.read",
    "capsules.write",
    "capsules.run",
    "schedules.read",
    "schedules.write",
    "gates.read",
    "gates.decide",
    "webhooks.read",
    "webhooks.write",
    "keys.read",
    "keys.write",
]
PERMISSIONS: tuple[Permission, ...] = Permission.__args__  # type: ignore[attr-defined]

_READ: frozenset[Permission] = frozenset(
    {"runs.read", "capsules.read", "schedules.read", "gates.read", "webhooks.read"}
)
GRANTS: dict[Role, frozenset[Permission]] = {
    "viewer": _READ,
    "approver": _READ | {"gates.decide"},
    "operator": _READ
    | {
        "runs.start",
        "runs.cancel",
        "capsules.write",
        "capsules.run",
        "schedules.write",
    },
    "admin": frozenset(PERMISSIONS),
}


# What each permission lets a key do, as a refusal says it ("may not cancel runs").
DOES: dict[Permission, str] = {
    "runs.read": "read runs, their events, artifacts and receipts",
    "runs.start": "start runs or upload their inputs",
    "runs.cancel": "cancel runs",
    "capsules.read": "read capsules",
    "capsules.write": "extract, import or export capsules",
    "capsules.run": "run capsules",
    "schedules.read": "read schedules",
    "schedules.write": "create, change or delete schedules",
    "gates.read": "read the gates inbox",
    "gates.decide": "decide gates",
    "webhooks.read": "read webhooks",
    "webhooks.write": "register or remove webhooks",
    "keys.read": "list the tenant's keys",
    "keys.write": "create or revoke the tenant's keys",
}


def least_role(permission: Permission) -> Role:
    """The least role that holds `permission` (what a refusal tells the caller to use)."""
    return next(role for role in ROLES if permission in GRANTS[role])


class Tenant(FrozenModel):
    """A tenant: the isolation boundary every run, capsule, schedule and key belongs to."""

    tenant_id: ScopeId
    created_at: AwareDatetime
    created_by: str


class ApiKey(FrozenModel):
    """An API key as stored and listed: never its secret, only the prefix that names it."""

    key_id: str = Field(description="the key's public id; its token starts with `fk_<key_id>_`")
    tenant_id: ScopeId
    role: Role
    actor: Actor = Field(description="who the key's requests act as in events")
    gate_roles: list[str] = Field(
        default_factory=list, description="the gate approver roles the key may decide as"
    )
    created_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    revoked_at: AwareDatetime | None = None

    @property
    def prefix(self) -> str:
        """How the key is recognised in lists and logs: `fk_<key_id>`."""
        return f"fk_{self.key_id}"


class IssuedKey(FrozenModel):
    """A key just created: its token, shown this once and never stored."""

    key: ApiKey
    token: str
