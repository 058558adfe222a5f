"""Alembic migrations of the event store (run by `activities.store.migrate.upgrade`)."""
