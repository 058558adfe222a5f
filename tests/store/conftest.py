"""Fixtures of the store contract tests: real PostgreSQL and S3 servers."""

from collections.abc import Iterator

import pytest

from tests.store.postgres import (
    PostgresServer,
    postgres_database_url,
    postgres_server,
    two_role_database,
)
from tests.store.s3 import moto_endpoint

__all__ = ["moto_endpoint", "postgres_app_database_url", "postgres_database_url", "postgres_server"]


@pytest.fixture(scope="class")
def postgres_app_database_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database per test class, migrated by its owner, reached as the app role."""
    with two_role_database(postgres_server) as db:
        yield db.app_url
