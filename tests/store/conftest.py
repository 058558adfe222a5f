"""Fixtures of the store contract tests: real PostgreSQL and S3 servers."""

from tests.store.postgres import postgres_database_url, postgres_server
from tests.store.s3 import moto_endpoint

__all__ = ["moto_endpoint", "postgres_database_url", "postgres_server"]
