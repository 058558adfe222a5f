"""Alembic migrations run from code: `upgrade(database_url)` and the at-head check on open."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from activities.store.engine import WRITE_OPTION, backend_of, create_store_engine
from activities.store.errors import StoreError
from activities.store.roles import grant_app_role
from schemas.error_codes import ErrorCode

__all__ = ["check_at_head", "head_revision", "open_migrated", "upgrade", "upgrade_engine"]

_SCRIPTS = Path(__file__).resolve().parent / "migrations"
# Arbitrary constant: concurrent `forge db upgrade` runs take turns instead of racing DDL.
_PG_MIGRATION_LOCK = 0x466F726765


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    return config


def head_revision() -> str:
    """The newest migration this code ships."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "activities/store/migrations/versions holds no migration"
    return head


def upgrade(database_url: str, *, grant_to: str | None = None) -> str:
    """Bring the database at `database_url` to the newest schema; returns the revision.

    `grant_to` (PostgreSQL) names the application role to grant every table to afterwards,
    as activities/store/roles.py describes; `database_url` is then the schema owner's.
    """
    engine = create_store_engine(database_url)
    try:
        revision = upgrade_engine(engine)
        if grant_to is not None:
            grant_app_role(engine, grant_to)
        return revision
    finally:
        engine.dispose()


def upgrade_engine(engine: Engine) -> str:
    """Run pending migrations on `engine` in one transaction; returns the revision."""
    config = _config()
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            if backend_of(engine.url) == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
            current = MigrationContext.configure(conn).get_current_revision()
    assert current is not None
    return current


def check_at_head(engine: Engine) -> None:
    """Raise a StoreError (SCHEMA_NOT_MIGRATED) unless the database is at this code's newest one."""
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    head = head_revision()
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    state = "has no Forge schema" if current is None else f"is at schema revision {current}"
    raise StoreError(
        f"the database {where} {state}, this Forge needs {head}: run `forge db upgrade` "
        "(with the same FORGE_DATABASE_URL) and try again",
        code=ErrorCode.SCHEMA_NOT_MIGRATED,
    )


def open_migrated(database_url: str) -> Engine:
    """An engine on `database_url` at the newest schema: SQLite is migrated, PostgreSQL checked.

    Raises:
        ValueError: The URL is malformed or names an unsupported backend.
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    engine = create_store_engine(database_url)
    try:
        if backend_of(engine.url) == "sqlite":
            upgrade_engine(engine)
        else:
            check_at_head(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine
