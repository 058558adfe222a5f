"""Forge settings: the one place the process environment is read, turned into a frozen model."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ENV_VARS", "Settings", "SettingsError"]

# Field name -> environment variable; kept public so help texts and docs can list them.
ENV_VARS: Mapping[str, str] = {
    "home": "FORGE_HOME",
    "temporal_address": "FORGE_TEMPORAL_ADDRESS",
    "namespace": "FORGE_NAMESPACE",
    "task_queue": "FORGE_TASK_QUEUE",
    "dev_server_port": "FORGE_DEV_PORT",
    "packs_path": "FORGE_PACKS_PATH",
}

_DEFAULT_HOME = ".forge"
# Mirrors the server's namespace name rule so a typo fails here, not on the first RPC.
_NAMESPACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_ADDRESS_RE = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]+)")


class SettingsError(ValueError):
    """An environment variable holds a value Forge cannot use."""

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable = variable
        self.value = value
        self.expected = expected
        super().__init__(f"{variable}={value!r} is invalid: expected {expected}")


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()


class Settings(BaseModel):
    """Process configuration, built once by an entry point and passed down explicitly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path = Field(default_factory=lambda: _absolute(Path(_DEFAULT_HOME)))
    temporal_address: str | None = None
    namespace: str = "default"
    task_queue: str = "forge"
    dev_server_port: int | None = Field(default=None, ge=1, le=65535)
    packs_path: tuple[Path, ...] = ()

    @field_validator("home")
    @classmethod
    def _home_absolute(cls, value: Path) -> Path:
        # State files are found by path later, so a cwd change must not move them.
        return _absolute(value)

    @field_validator("packs_path")
    @classmethod
    def _packs_absolute(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(_absolute(p) for p in value)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``FORGE_*`` variables; empty values count as unset.

        Args:
            environ: Variables to read; the process environment when omitted.

        Raises:
            SettingsError: A variable holds an invalid value (the message names it).
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable in ENV_VARS.items():
            raw = env.get(variable, "")
            if raw.strip():
                values[field] = _PARSERS[field](variable, raw)
        return cls(**values)


def _parse_home(variable: str, raw: str) -> Path:
    return Path(raw.strip())


def _parse_address(variable: str, raw: str) -> str:
    value = raw.strip()
    match = _ADDRESS_RE.fullmatch(value)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise SettingsError(variable, raw, "host:port of a Temporal frontend, e.g. localhost:7233")
    return value


def _parse_namespace(variable: str, raw: str) -> str:
    if _NAMESPACE_RE.fullmatch(raw) is None:
        raise SettingsError(
            variable, raw, "a Temporal namespace name: letters, digits, '.', '_' or '-'"
        )
    return raw


def _parse_task_queue(variable: str, raw: str) -> str:
    if raw != raw.strip() or any(c.isspace() for c in raw):
        raise SettingsError(variable, raw, "a task queue name without whitespace")
    return raw


def _parse_port(variable: str, raw: str) -> int:
    expected = "an integer port between 1 and 65535, or unset to pick a free port"
    try:
        port = int(raw.strip(), 10)
    except ValueError:
        raise SettingsError(variable, raw, expected) from None
    if not 1 <= port <= 65535:
        raise SettingsError(variable, raw, expected)
    return port


def _parse_packs(variable: str, raw: str) -> tuple[Path, ...]:
    # Empty entries (a trailing separator, "a::b") are skipped like PATH does.
    return tuple(Path(part) for part in raw.split(os.pathsep) if part.strip())


_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "home": _parse_home,
    "temporal_address": _parse_address,
    "namespace": _parse_namespace,
    "task_queue": _parse_task_queue,
    "dev_server_port": _parse_port,
    "packs_path": _parse_packs,
}
