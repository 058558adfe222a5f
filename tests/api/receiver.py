"""A webhook receiver for tests: a real HTTP server on a loopback address, in a thread.

It answers 500 to its first `fail_first` POSTs (every one, with `always_fail`), then verifies
each delivery's signature with the `standardwebhooks` library (an implementation that is not
Forge's) and, on a gate-opened message, decides the gate with one call built from the
message's fields alone, as a service would.
"""

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx
from standardwebhooks import Webhook

__all__ = ["Delivery", "Receiver"]


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def message(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.body)
        return found


@dataclass
class Receiver:
    host: str = "127.0.0.1"
    fail_first: int = 0
    always_fail: bool = False
    secret: str | None = None  # set once the webhook is registered
    decide: tuple[str, str] | None = None  # (API base URL, approver token)
    deliveries: list[Delivery] = field(default_factory=list)
    decisions: list[httpx.Response] = field(default_factory=list)
    verified: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status, message = receiver.answer(dict(self.headers.items()), body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if message is not None:  # answered first, then acted on, as a service would
                    receiver.act_on(message)

            def log_message(self, *_args: object) -> None:
                return None

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._server.server_address[1]}/hooks/forge"

    def answer(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any] | None]:
        with self._lock:
            failing = self.always_fail or len(self.deliveries) < self.fail_first
            status = 500 if failing else 200
            self.deliveries.append(Delivery(headers, body, status))
        if failing:
            return status, None
        assert self.secret is not None
        message = Webhook(self.secret).verify(body, headers)  # raises if the signature is off
        self.verified.append(message)
        return status, message

    def act_on(self, message: dict[str, Any]) -> None:
        if message["type"] == "gate.requested.v1" and self.decide is not None:
            api, token = self.decide
            data = message["data"]
            self.decisions.append(
                httpx.post(
                    api + data["decision_path"],
                    json={
                        "decision": "approve",
                        "contract_hash": data["contract_hash"],
                        "comment": f"approved by the {data['approver_role']} service",
                    },
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                )
            )

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
