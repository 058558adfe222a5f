"""The application role on PostgreSQL: granted what the stores do, owning nothing, no bypass.

`forge db upgrade` migrates as the schema owner (FORGE_DATABASE_OWNER_URL) and then calls
`grant_app_role` for the role of FORGE_DATABASE_URL, so every table a migration added is
granted on the next upgrade. Row-level security only holds a role that neither owns the
tables nor bypasses it, so such a role is refused rather than granted.
"""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection

from activities.store.engine import backend_of, normalize_url
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = ["AppRoleUnsafe", "app_role_of", "check_app_role", "grant_app_role"]

_VERSION_TABLE = "alembic_version"
_ROLE = text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :role")
_OWNED = text(
    "SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
    "WHERE c.relnamespace = current_schema()::regnamespace AND r.rolname = :role "
    "ORDER BY c.relname"
)
_TABLES = text(
    "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
    "AND c.relkind IN ('r', 'p') ORDER BY c.relname"
)
# The SECURITY DEFINER functions of the migrations: the app role's only cross-tenant reads.
_DEFINERS = text(
    "SELECT p.oid::regprocedure::text FROM pg_proc p "
    "WHERE p.pronamespace = current_schema()::regnamespace AND p.prosecdef "
    "AND p.proname LIKE 'forge\\_%' ORDER BY 1"
)


class AppRoleUnsafe(ForgeError, ValueError):
    """FORGE_DATABASE_URL names a role row-level security would not hold (or none at all)."""

    code = ErrorCode.SETTINGS_INVALID


def app_role_of(app_url: str, owner_url: str) -> str | None:
    """The role to grant: the user of `app_url`, or None when it is the owner itself.

    Raises:
        AppRoleUnsafe: `app_url` is not PostgreSQL, names no user, or another database than
            `owner_url`.
    """
    app, owner = normalize_url(app_url), normalize_url(owner_url)
    if backend_of(app) != "postgresql":
        raise AppRoleUnsafe(
            "FORGE_DATABASE_OWNER_URL is set but FORGE_DATABASE_URL is not PostgreSQL",
            hint="point both at the same PostgreSQL database, or unset FORGE_DATABASE_OWNER_URL",
        )
    if not app.username:
        raise AppRoleUnsafe(
            "FORGE_DATABASE_URL names no user: the role to grant is unknown",
            hint="write it as postgresql+psycopg://forge_app:PASSWORD@HOST:PORT/DATABASE",
        )
    if (app.host, app.port, app.database) != (owner.host, owner.port, owner.database):
        raise AppRoleUnsafe(
            f"FORGE_DATABASE_URL ({app.host}:{app.port}/{app.database}) and "
            f"FORGE_DATABASE_OWNER_URL ({owner.host}:{owner.port}/{owner.database}) name "
            "different databases",
            hint="both name the one database: the owner migrates it, the app role uses it",
        )
    return None if app.username == owner.username else app.username


def grant_app_role(owner: Engine, role: str) -> list[str]:
    """Grant `role` DML on every table and EXECUTE on the definer functions; returns the tables.

    Raises:
        AppRoleUnsafe: `role` does not exist, is a superuser or BYPASSRLS role, or owns a
            relation in the schema; nothing was granted.
    """
    with owner.begin() as conn:
        check_app_role(conn, role)
        quoted = conn.dialect.identifier_preparer.quote(role)
        tables = [t for t in conn.execute(_TABLES).scalars()]
        conn.execute(text(f"GRANT USAGE ON SCHEMA {_schema(conn)} TO {quoted}"))
        for table in tables:
            rights = "SELECT" if table == _VERSION_TABLE else "SELECT, INSERT, UPDATE, DELETE"
            conn.execute(text(f'GRANT {rights} ON TABLE "{table}" TO {quoted}'))
        conn.execute(text(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {_schema(conn)} TO {quoted}"))
        for function in conn.execute(_DEFINERS).scalars():
            conn.execute(text(f"GRANT EXECUTE ON FUNCTION {function} TO {quoted}"))
    return [t for t in tables if t != _VERSION_TABLE]


def _schema(conn: Connection) -> str:
    name = conn.execute(text("SELECT current_schema()")).scalar_one()
    return str(conn.dialect.identifier_preparer.quote(name))


def check_app_role(conn: Connection, role: str) -> None:
    """Refuse `role` unless row-level security holds it: it exists, cannot bypass, owns nothing.

    Raises:
        AppRoleUnsafe: the role does not exist, is a superuser or BYPASSRLS role, or owns a
            relation in the connection's schema (each with what to run).
    """
    found = conn.execute(_ROLE, {"role": role}).first()
    if found is None:
        raise AppRoleUnsafe(
            f"the application role {role!r} (the user of FORGE_DATABASE_URL) does not exist",
            hint=f'create it as the owner or an admin: CREATE ROLE "{role}" LOGIN PASSWORD '
            "'...' NOSUPERUSER NOBYPASSRLS; then run `forge db upgrade` again",
        )
    if found.rolsuper or found.rolbypassrls:
        raise AppRoleUnsafe(
            f"the application role {role!r} is a superuser or has BYPASSRLS: row-level "
            "security would not hold it",
            hint=f'ALTER ROLE "{role}" NOSUPERUSER NOBYPASSRLS, or connect FORGE_DATABASE_URL '
            "as another role (docs/isolation.md)",
        )
    owned = list(conn.execute(_OWNED, {"role": role}).scalars())
    if owned:
        raise AppRoleUnsafe(
            f"the application role {role!r} owns {', '.join(owned)}: an owner can turn "
            "row-level security off",
            hint="run migrations as another role (FORGE_DATABASE_OWNER_URL) and reassign them: "
            f'REASSIGN OWNED BY "{role}" TO <owner> (docs/isolation.md)',
        )
