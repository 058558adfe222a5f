"""`forge api`'s app served over real HTTP on a loopback port, in a thread of the test process.

Its own event loop and Temporal client, as the `forge api` process has; the test talks to it
with an HTTP client only. `running_api` brings up the whole installation the API tests (and
`tests/bench/bench_api.py`) use: a worker on the same stores and two tenants with a key per role.
"""

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import uvicorn
from temporalio.testing import WorkflowEnvironment

from activities.store.access import open_access_store
from activities.store.events import open_event_store
from schemas.access import ROLES
from schemas.events import Event
from schemas.scope import Actor
from tests.workflows.engine import Engine, engine
from workers.api.app import create_app
from workers.settings import Settings

__all__ = ["TENANTS", "Api", "ApiServer", "ServedApp", "api_without_worker", "running_api"]

TENANTS = ("acme", "globex")


class ServedApp:
    """Any ASGI app served by uvicorn on 127.0.0.1 (a free port) in a thread of its own."""

    def __init__(self, app: Any, *, name: str = "asgi-app") -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self.url = ""

    def __enter__(self) -> "ServedApp":
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


class ApiServer(ServedApp):
    """`forge api`'s app (`create_app(settings)`): it connects to Temporal as it starts."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(create_app(settings), name="forge-api")


@dataclass
class Api:
    url: str
    settings: Settings
    eng: Engine
    tokens: dict[tuple[str, str], str] = field(default_factory=dict)  # (tenant, role) -> token

    def client(self, tenant: str = "acme", role: str = "admin", **kw: Any) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[tenant, role]}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60, **kw)

    def client_with(self, token: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)

    def every_event(self, **filters: Any) -> list[Event]:
        """Every tenant's events matching `filters`, read as the schema owner.

        `eng.services` connects as the application role on PostgreSQL, which reads nothing
        without a tenant; the owner, unscoped, reads every row.
        """
        with open_event_store(self.settings.database_url) as store:
            return store.list_events(limit=1_000_000, **filters)

    def anonymous(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=60)


@asynccontextmanager
async def running_api(
    temporal_env: WorkflowEnvironment,
    task_queue: str,
    home: Path,
    database_url: str,
    *,
    api_database_url: str | None = None,
    **settings: Any,
) -> AsyncIterator[Api]:
    """The API over HTTP, a ForgeWorker on `task_queue`, a key per role of each of TENANTS.

    `api_database_url` (PostgreSQL's application role) is what the API server and the worker
    connect as; the tenants and keys set up here and the tests' own reads use `database_url`.
    """
    s, served, tokens = _installation(
        temporal_env, task_queue, home, database_url, api_database_url, settings
    )
    async with engine(temporal_env, home, task_queue, settings=served) as eng:
        with ApiServer(served) as server:
            yield Api(server.url, s, eng, tokens)


@contextmanager
def api_without_worker(
    temporal_env: WorkflowEnvironment,
    task_queue: str,
    home: Path,
    database_url: str,
    *,
    api_database_url: str | None = None,
) -> Iterator[tuple[str, Settings, dict[tuple[str, str], str]]]:
    """(url, the worker's Settings, tokens): the API alone, no worker polls `task_queue`.

    A test starts and stops a worker itself (`engine(..., settings=...)`) to see what the API
    answers while none is there.
    """
    s, served, tokens = _installation(
        temporal_env, task_queue, home, database_url, api_database_url, {}
    )
    with ApiServer(served) as server:
        yield server.url, served, tokens


def _installation(
    temporal_env: WorkflowEnvironment,
    task_queue: str,
    home: Path,
    database_url: str,
    api_database_url: str | None,
    settings: dict[str, Any],
) -> tuple[Settings, Settings, dict[tuple[str, str], str]]:
    s = Settings(
        home=home,
        task_queue=task_queue,
        temporal_address=temporal_env.client.service_client.config.target_host,
        database_url=database_url,
        **settings,
    )
    with open_access_store(s.database_url) as access:
        tokens: dict[tuple[str, str], str] = {}
        for tenant in TENANTS:
            access.create_tenant(tenant, created_by="test")
            for role in ROLES:
                actor = Actor(
                    id=f"{tenant}-{role}", name=f"{tenant} {role}", role=role, kind="system"
                )
                issued = access.create_key(tenant, role, actor, gate_roles=["ops"])
                tokens[tenant, role] = issued.token
    served = s.model_copy(update={"database_url": api_database_url or s.database_url})
    return s, served, tokens
