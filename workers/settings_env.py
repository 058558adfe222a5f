"""Reading one FORGE_* variable: each parser turns its text into a value or a SettingsError.

workers/settings.py builds the Settings model from these (Settings.from_env); an error names
the variable, what it held (a database password redacted) and what was expected.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from compiler.addresses import IpAddress
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "DEFAULT_HOME",
    "PARSERS",
    "SettingsError",
    "absolute",
    "check_artifacts_url",
    "check_build_id",
    "check_database_url",
    "check_deployment_name",
    "check_endpoint",
    "check_owner_url",
]

DEFAULT_HOME = ".forge"
# Mirrors the server's namespace name rule so a typo fails here, not on the first RPC.
_NAMESPACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_ADDRESS_RE = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]+)")
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")
_DATABASE_EXPECTED = (
    "sqlite:///PATH (e.g. sqlite:////var/lib/forge/forge.db) or "
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"
)
# Temporal names a version "<deployment>.<build id>": a deployment name has no '.'.
_DEPLOYMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_BUILD_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_ARTIFACTS_EXPECTED = "a directory path, file:///ABSOLUTE/PATH or s3://BUCKET/PREFIX"


class SettingsError(ForgeError, ValueError):
    """An environment variable holds a value Forge cannot use."""

    code = ErrorCode.SETTINGS_INVALID

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable = variable
        self.value = value
        self.expected = expected
        super().__init__(f"{variable}={value!r} is invalid: expected {expected}")


def absolute(path: Path) -> Path:
    return path.expanduser().resolve()


def _parse_secret(variable: str, raw: str) -> SecretStr:
    return SecretStr(raw.strip())


def _parse_url(variable: str, raw: str) -> str:
    value = raw.strip()
    if not value.startswith(("http://", "https://")):
        raise SettingsError(variable, raw, "an http:// or https:// URL")
    return value


def _parse_script(variable: str, raw: str) -> Path:
    path = absolute(Path(raw.strip()))
    if not path.is_file():
        raise SettingsError(variable, raw, "the path of an existing model script file (YAML/JSON)")
    return path


def _parse_home(variable: str, raw: str) -> Path:
    return Path(raw.strip())


def _parse_workspace_root(variable: str, raw: str) -> Path:
    path = Path(raw.strip())
    if not path.is_absolute():
        raise SettingsError(variable, raw, "an absolute path, e.g. /var/lib/forge/workspaces")
    return path


def _parse_step_runtime(variable: str, raw: str) -> Path:
    path = Path(raw.strip())
    if not path.is_absolute():
        raise SettingsError(variable, raw, "an absolute path, e.g. /opt/forge/runtime")
    return path


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


def _parse_size(variable: str, raw: str) -> int:
    try:
        size = int(raw.strip(), 10)
    except ValueError:
        raise SettingsError(variable, raw, "a number of bytes, e.g. 268435456") from None
    if size < 1:
        raise SettingsError(variable, raw, "a positive number of bytes")
    return size


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


def _parse_roots(variable: str, raw: str) -> tuple[Path, ...]:
    roots = tuple(Path(part.strip()) for part in raw.split(os.pathsep) if part.strip())
    if not all(p.is_absolute() for p in roots):
        raise SettingsError(
            variable, raw, f"absolute directories separated by {os.pathsep!r}, e.g. /srv/data"
        )
    return roots


def _parse_buckets(variable: str, raw: str) -> tuple[str, ...]:
    buckets = tuple(part.strip() for part in raw.split(",") if part.strip())
    if not all(_BUCKET_RE.fullmatch(b) for b in buckets):
        raise SettingsError(variable, raw, "S3 bucket names separated by ',', e.g. acme-billing")
    return buckets


def _parse_ips(variable: str, raw: str) -> tuple[IpAddress, ...]:
    try:
        return tuple(ip_address(part.strip()) for part in raw.split(",") if part.strip())
    except ValueError:
        raise SettingsError(variable, raw, "IP addresses separated by ',', e.g. 10.0.0.7") from None


def _parse_attempts(variable: str, raw: str) -> int:
    try:
        attempts = int(raw.strip(), 10)
    except ValueError:
        attempts = 0
    if not 1 <= attempts <= 100:
        raise SettingsError(variable, raw, "a number of attempts from 1 to 100, e.g. 8")
    return attempts


def check_database_url(raw: str) -> str:
    """The URL with a relative SQLite path made absolute; ValueError(expected) when unusable."""
    value = raw.strip()
    scheme, sep, rest = value.partition("://")
    if scheme == "sqlite" and sep:
        path = rest.removeprefix("/")
        if not rest.startswith("/") or not path or path == ":memory:" or "?" in path:
            raise ValueError(_DATABASE_EXPECTED)
        # A relative file would move with the cwd, like a relative FORGE_HOME would.
        return f"sqlite:///{absolute(Path(path))}"
    if scheme in _POSTGRES_SCHEMES and sep:
        parts = urlsplit(value)
        if not parts.hostname and not parts.path.strip("/"):
            raise ValueError(_DATABASE_EXPECTED)
        return value
    raise ValueError(_DATABASE_EXPECTED)


def check_owner_url(raw: str) -> str:
    """A PostgreSQL URL: SQLite has no roles, so there is no owner to name."""
    value = check_database_url(raw)
    if value.startswith("sqlite"):
        raise ValueError(
            "a PostgreSQL URL (postgresql+psycopg://OWNER:PASSWORD@HOST:PORT/DATABASE); SQLite "
            "has no roles, so leave FORGE_DATABASE_OWNER_URL unset with SQLite"
        )
    return value


def check_artifacts_url(raw: str) -> str:
    """The URL, a plain path made absolute; ValueError(expected) when unusable."""
    value = raw.strip()
    if "://" not in value:
        return str(absolute(Path(value)))
    parts = urlsplit(value)
    if parts.scheme == "s3" and parts.netloc and _BUCKET_RE.fullmatch(parts.netloc):
        return value
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path.startswith("/"):
        return value
    raise ValueError(_ARTIFACTS_EXPECTED)


def check_deployment_name(raw: str) -> str:
    """A worker deployment name; ValueError(expected) when Temporal could not take it."""
    if _DEPLOYMENT_RE.fullmatch(raw) is None:
        raise ValueError(
            "a worker deployment name: up to 100 letters, digits, '_' or '-' (no '.'), e.g. forge"
        )
    return raw


def check_build_id(raw: str) -> str:
    """A worker build id; ValueError(expected) when it is not one."""
    if _BUILD_ID_RE.fullmatch(raw) is None:
        raise ValueError(
            "a build id: up to 100 letters, digits, '.', '_', '+' or '-', e.g. 0.1.0-3f2a9c1b7d4e"
        )
    return raw


def check_endpoint(raw: str) -> str:
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("an http(s) URL of an S3-compatible endpoint, e.g. http://minio:9000")
    return value


def _redact_password(raw: str) -> str:
    # Error messages end up in logs; a database password must not.
    parts = urlsplit(raw.strip())
    if parts.password is None:
        return raw
    return raw.replace(f":{parts.password}@", ":***@", 1)


def _validated(
    check: Callable[[str], str], shown: Callable[[str], str] = str
) -> Callable[[str, str], str]:
    def parse(variable: str, raw: str) -> str:
        try:
            return check(raw)
        except ValueError as exc:
            raise SettingsError(variable, shown(raw), str(exc)) from None

    return parse


PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "anthropic_api_key": _parse_secret,
    "anthropic_base_url": _parse_url,
    "model_script": _parse_script,
    "home": _parse_home,
    "workspace_root": _parse_workspace_root,
    "temporal_address": _parse_address,
    "namespace": _parse_namespace,
    "task_queue": _parse_task_queue,
    "dev_server_port": _parse_port,
    "packs_path": _parse_packs,
    "input_roots": _parse_roots,
    "input_buckets": _parse_buckets,
    "database_url": _validated(check_database_url, _redact_password),
    "database_owner_url": _validated(check_owner_url, _redact_password),
    "artifacts_url": _validated(check_artifacts_url),
    "s3_endpoint": _validated(check_endpoint),
    "api_max_upload_bytes": _parse_size,
    "api_max_body_bytes": _parse_size,
    "webhook_signing_key": _parse_secret,
    "webhook_allow_ips": _parse_ips,
    "webhook_max_attempts": _parse_attempts,
    "deployment_name": _validated(check_deployment_name),
    "build_id": _validated(check_build_id),
    "step_runtime": _parse_step_runtime,
}
