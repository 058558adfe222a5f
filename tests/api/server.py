"""`forge api`'s app served over real HTTP on a loopback port, in a thread of the test process.

Its own event loop and Temporal client, as the `forge api` process has; the test talks to it
with an HTTP client only.
"""

import threading
import time
from types import TracebackType

import uvicorn

from workers.api.app import create_app
from workers.settings import Settings

__all__ = ["ApiServer"]


class ApiServer:
    def __init__(self, settings: Settings) -> None:
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="forge-api", daemon=True)
        self.url = ""

    def __enter__(self) -> "ApiServer":
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
