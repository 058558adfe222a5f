"""Alembic environment: runs Forge's migrations on the connection `upgrade` hands in."""

from __future__ import annotations

from alembic import context

from activities.store.tables import metadata


def _run() -> None:
    if context.is_offline_mode():
        raise RuntimeError("Forge migrations run online, via `forge db upgrade`")
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "run Forge migrations through activities.store.migrate.upgrade(database_url)"
        )
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        # SQLite cannot ALTER most things in place; batch mode rebuilds tables instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


_run()
