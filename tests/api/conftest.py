"""An API over real HTTP, a worker on the same stores, two tenants with a key per role.

`backend` runs each test on SQLite and on the real PostgreSQL server (a database per test).
"""

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from activities.store.access import open_access_store
from activities.store.migrate import upgrade
from schemas.access import ROLES
from schemas.scope import Actor
from tests.api.server import ApiServer
from tests.store.postgres import create_database, drop_database, postgres_server
from tests.workflows.engine import Engine, engine
from workers.settings import Settings

__all__ = ["postgres_server"]

TENANTS = ("acme", "globex")


@dataclass
class Api:
    url: str
    settings: Settings
    eng: Engine
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (tenant, role) -> token

    def client(self, tenant: str = "acme", role: str = "admin", **kw: object) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[tenant, role]}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60, **kw)

    def client_with(self, token: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)

    def anonymous(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=60)


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


@asynccontextmanager
async def running_api(
    temporal_env, task_queue: str, home: Path, database_url: str, **settings: object
) -> AsyncIterator[Api]:
    s = Settings(
        home=home,
        task_queue=task_queue,
        temporal_address=temporal_env.client.service_client.config.target_host,
        database_url=database_url,
        **settings,
    )
    with open_access_store(s.database_url) as access:
        tokens = {}
        for tenant in TENANTS:
            access.create_tenant(tenant, created_by="test")
            for role in ROLES:
                actor = Actor(
                    id=f"{tenant}-{role}", name=f"{tenant} {role}", role=role, kind="system"
                )
                issued = access.create_key(tenant, role, actor, gate_roles=["ops"])
                tokens[tenant, role] = issued.token
    async with engine(temporal_env, home, task_queue, settings=s) as eng:
        with ApiServer(s) as server:
            yield Api(server.url, s, eng, tokens)


@pytest.fixture
async def api(temporal_env, task_queue, tmp_path, database_url) -> AsyncIterator[Api]:
    async with running_api(temporal_env, task_queue, tmp_path / "home", database_url) as found:
        yield found
