"""Fixtures of the store contract tests: the real PostgreSQL server and its databases."""

from tests.store.postgres import postgres_database_url, postgres_server

__all__ = ["postgres_database_url", "postgres_server"]
