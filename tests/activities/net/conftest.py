"""Fixtures of the outbound-client tests: a guard on connect, and no system DNS."""

import ipaddress
import socket
from typing import Any

import pytest

from tests.support.outbound import guard_connects


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connect of the test; one to an address that is not loopback fails it."""
    return guard_connects(monkeypatch)


@pytest.fixture(autouse=True)
def no_system_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests give the client its resolver: the system's is never asked for a name.

    A numeric host still passes (urllib, shown for contrast, looks up "127.0.0.1" too).
    """
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise AssertionError(f"socket.getaddrinfo({host!r}) was called") from None
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
