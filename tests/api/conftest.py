"""An API over real HTTP, a worker on the same stores, two tenants with a key per role.

`backend` runs each test on SQLite and on the real PostgreSQL server (a database per test).
"""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from activities.store.migrate import upgrade
from tests.api.server import Api, running_api
from tests.store.postgres import create_database, drop_database, postgres_server

__all__ = ["postgres_server"]


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'forge.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    name = create_database(server)
    url = server.url(name)
    upgrade(url)
    try:
        yield url
    finally:
        drop_database(server, name)


@pytest.fixture
async def api(temporal_env, task_queue, tmp_path, database_url) -> AsyncIterator[Api]:
    async with running_api(temporal_env, task_queue, tmp_path / "home", database_url) as found:
        yield found
