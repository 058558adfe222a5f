"""An API over real HTTP, a worker on the same stores, two tenants with a key per role.

`backend` runs each test on SQLite and on the real PostgreSQL server (a database per test).
"""

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.api.server import Api, running_api
from tests.store.postgres import postgres_server, two_role_database

__all__ = ["postgres_server"]


@pytest.fixture(params=["sqlite", "postgres"])
def database_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(the worker's and the tests' URL, the API server's URL).

    On PostgreSQL the API and the worker connect as the application role, held by row-level
    security (docs/isolation.md); the tests' own set-up and reads connect as the schema owner.
    """
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'forge.db'}"
        yield url, url
        return
    with two_role_database(request.getfixturevalue("postgres_server")) as db:
        yield db.owner_url, db.app_url


@pytest.fixture
def database_url(database_urls: tuple[str, str]) -> str:
    return database_urls[0]


@pytest.fixture
def api_with(
    temporal_env, task_queue, tmp_path, database_urls
) -> Callable[..., AbstractAsyncContextManager[Api]]:
    """`async with api_with(**settings) as api`: the test's API, worker and stores, with
    these Settings fields on top (an upload limit, webhook allowances, ...)."""
    owner, app = database_urls

    def start(**settings: Any) -> AbstractAsyncContextManager[Api]:
        home = tmp_path / "home"
        return running_api(temporal_env, task_queue, home, owner, api_database_url=app, **settings)

    return start


@pytest.fixture
async def api(api_with) -> AsyncIterator[Api]:
    async with api_with() as found:
        yield found
