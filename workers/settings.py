"""Forge settings: the one place the process environment is read, turned into a frozen model."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from activities.sandbox.bwrap import host_path_problem
from compiler.addresses import IpAddress
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = ["ENV_VARS", "Settings", "SettingsError", "default_workspace_root"]

# Field name -> environment variable; kept public so help texts and docs can list them.
ENV_VARS: Mapping[str, str] = {
    "home": "FORGE_HOME",
    "temporal_address": "FORGE_TEMPORAL_ADDRESS",
    "namespace": "FORGE_NAMESPACE",
    "task_queue": "FORGE_TASK_QUEUE",
    "dev_server_port": "FORGE_DEV_PORT",
    "packs_path": "FORGE_PACKS_PATH",
    "database_url": "FORGE_DATABASE_URL",
    "database_owner_url": "FORGE_DATABASE_OWNER_URL",
    "artifacts_url": "FORGE_ARTIFACTS_URL",
    "s3_endpoint": "FORGE_S3_ENDPOINT",
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "anthropic_base_url": "ANTHROPIC_BASE_URL",
    "model_script": "FORGE_MODEL_SCRIPT",
    "workspace_root": "FORGE_WORKSPACE_ROOT",
    "input_roots": "FORGE_INPUT_ROOTS",
    "input_buckets": "FORGE_INPUT_BUCKETS",
    "api_max_upload_bytes": "FORGE_API_MAX_UPLOAD_BYTES",
    "webhook_signing_key": "FORGE_WEBHOOK_SIGNING_KEY",
    "webhook_allow_ips": "FORGE_WEBHOOK_ALLOW_IPS",
    "webhook_max_attempts": "FORGE_WEBHOOK_MAX_ATTEMPTS",
}

_DEFAULT_HOME = ".forge"
# Mirrors the server's namespace name rule so a typo fails here, not on the first RPC.
_NAMESPACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_ADDRESS_RE = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]+)")
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_POSTGRES_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")
_DATABASE_EXPECTED = (
    "sqlite:///PATH (e.g. sqlite:////var/lib/forge/forge.db) or "
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"
)
_ARTIFACTS_EXPECTED = "a directory path, file:///ABSOLUTE/PATH or s3://BUCKET/PREFIX"
# S3 bucket naming rules (3-63 chars, lowercase letters, digits, '.', '-').
_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


class SettingsError(ForgeError, ValueError):
    """An environment variable holds a value Forge cannot use."""

    code = ErrorCode.SETTINGS_INVALID

    def __init__(self, variable: str, value: str, expected: str) -> None:
        self.variable = variable
        self.value = value
        self.expected = expected
        super().__init__(f"{variable}={value!r} is invalid: expected {expected}")


def _absolute(path: Path) -> Path:
    return path.expanduser().resolve()


def default_workspace_root() -> Path:
    """Where step workspaces live by default: a neutral per-user path outside checkout and home.

    Workspaces are bound into sandboxes, whose mount table and bwrap command line show the
    host path; /var/tmp/forge-<uid> tells step code nothing about the host.
    """
    return Path(f"/var/tmp/forge-{os.getuid()}/workspaces")


def _workspace_root_problem(root: Path, home: Path) -> str | None:
    if not root.is_absolute():
        return "an absolute path"
    if root == home or root.is_relative_to(home):
        return f"a directory outside FORGE_HOME ({home}): its path would show inside sandboxes"
    problem = host_path_problem(root, "workspace root", "choose another directory")
    return None if problem is None else f"a neutral directory ({problem})"


class Settings(BaseModel):
    """Process configuration, built once by an entry point and passed down explicitly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path = Field(default_factory=lambda: _absolute(Path(_DEFAULT_HOME)))
    temporal_address: str | None = None
    namespace: str = "default"
    task_queue: str = "forge"
    dev_server_port: int | None = Field(default=None, ge=1, le=65535)
    packs_path: tuple[Path, ...] = ()
    # Empty means "derive from home"; the model validator below fills both in.
    database_url: str = ""
    # PostgreSQL only: the schema owner `forge db upgrade` migrates as, granting the role of
    # database_url what it needs (docs/isolation.md). Unset: one role does both.
    database_owner_url: str | None = None
    artifacts_url: str = ""
    s3_endpoint: str | None = None
    # The model layer: Anthropic when a key is set; a scripted provider (tests, demos) from a
    # script file stands in for every binding the key does not serve. The key never leaves
    # this object's SecretStr: not in reprs, logs, events or the sandbox.
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    model_script: Path | None = None
    # Step workspaces are bound into sandboxes: a neutral path, never the checkout or a home.
    workspace_root: Path = Field(default_factory=default_workspace_root)
    # Where a capsule run may read its inputs: local directories (the working directory when
    # unset) and S3 buckets (none when unset). Anything else, and file:// elsewhere, is refused.
    input_roots: tuple[Path, ...] = Field(default_factory=lambda: (Path.cwd(),))
    input_buckets: tuple[str, ...] = ()
    # The HTTP API: the largest upload it stores (POST /v1/uploads).
    api_max_upload_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    # Webhooks: the key every webhook's secret derives from (unset: one generated into
    # home/webhook-signing.key), the non-public IPs deliveries may reach (the operator's
    # choice; a tenant cannot widen it), and the attempts a delivery gets.
    webhook_signing_key: SecretStr | None = None
    webhook_allow_ips: tuple[IpAddress, ...] = ()
    webhook_max_attempts: int = Field(default=8, ge=1, le=100)

    @model_validator(mode="before")
    @classmethod
    def _derive_store_locations(cls, data: Any) -> Any:
        # The embedded defaults live under home, so they follow FORGE_HOME unless set.
        if not isinstance(data, dict):
            return data
        home = _absolute(Path(data.get("home") or _DEFAULT_HOME))
        derived = dict(data)
        if not derived.get("database_url"):
            derived["database_url"] = f"sqlite:///{home / 'forge.db'}"
        if not derived.get("artifacts_url"):
            derived["artifacts_url"] = str(home / "artifacts")
        return derived

    @property
    def artifacts_durable(self) -> bool:
        """Whether a local artifact store flushes each blob to disk: as durable as the event log.

        The embedded SQLite log is flushed at checkpoints, not per commit; PostgreSQL commits
        are durable, and so are blobs beside them.
        """
        return not self.database_url.startswith("sqlite")

    @model_validator(mode="after")
    def _workspace_root_neutral(self) -> Settings:
        problem = _workspace_root_problem(self.workspace_root, self.home)
        if problem is not None:
            raise ValueError(f"workspace_root {self.workspace_root} must be {problem}")
        return self

    @field_validator("home")
    @classmethod
    def _home_absolute(cls, value: Path) -> Path:
        # State files are found by path later, so a cwd change must not move them.
        return _absolute(value)

    @field_validator("packs_path")
    @classmethod
    def _packs_absolute(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(_absolute(p) for p in value)

    @field_validator("input_roots")
    @classmethod
    def _roots_absolute(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(_absolute(p).resolve() for p in value)

    @field_validator("database_url")
    @classmethod
    def _database_url_valid(cls, value: str) -> str:
        return _check_database_url(value)

    @field_validator("database_owner_url")
    @classmethod
    def _database_owner_url_valid(cls, value: str | None) -> str | None:
        return None if value is None else _check_owner_url(value)

    @field_validator("artifacts_url")
    @classmethod
    def _artifacts_url_valid(cls, value: str) -> str:
        return _check_artifacts_url(value)

    @field_validator("s3_endpoint")
    @classmethod
    def _s3_endpoint_valid(cls, value: str | None) -> str | None:
        return None if value is None else _check_endpoint(value)

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
        if "workspace_root" in values:
            home = _absolute(Path(values.get("home") or _DEFAULT_HOME))
            problem = _workspace_root_problem(values["workspace_root"], home)
            if problem is not None:
                raise SettingsError(
                    ENV_VARS["workspace_root"], str(values["workspace_root"]), problem
                )
        return cls(**values)


def _parse_secret(variable: str, raw: str) -> SecretStr:
    return SecretStr(raw.strip())


def _parse_url(variable: str, raw: str) -> str:
    value = raw.strip()
    if not value.startswith(("http://", "https://")):
        raise SettingsError(variable, raw, "an http:// or https:// URL")
    return value


def _parse_script(variable: str, raw: str) -> Path:
    path = _absolute(Path(raw.strip()))
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


def _check_database_url(raw: str) -> str:
    """The URL with a relative SQLite path made absolute; ValueError(expected) when unusable."""
    value = raw.strip()
    scheme, sep, rest = value.partition("://")
    if scheme == "sqlite" and sep:
        path = rest.removeprefix("/")
        if not rest.startswith("/") or not path or path == ":memory:" or "?" in path:
            raise ValueError(_DATABASE_EXPECTED)
        # A relative file would move with the cwd, like a relative FORGE_HOME would.
        return f"sqlite:///{_absolute(Path(path))}"
    if scheme in _POSTGRES_SCHEMES and sep:
        parts = urlsplit(value)
        if not parts.hostname and not parts.path.strip("/"):
            raise ValueError(_DATABASE_EXPECTED)
        return value
    raise ValueError(_DATABASE_EXPECTED)


def _check_owner_url(raw: str) -> str:
    """A PostgreSQL URL: SQLite has no roles, so there is no owner to name."""
    value = _check_database_url(raw)
    if value.startswith("sqlite"):
        raise ValueError(
            "a PostgreSQL URL (postgresql+psycopg://OWNER:PASSWORD@HOST:PORT/DATABASE); SQLite "
            "has no roles, so leave FORGE_DATABASE_OWNER_URL unset with SQLite"
        )
    return value


def _check_artifacts_url(raw: str) -> str:
    """The URL, a plain path made absolute; ValueError(expected) when unusable."""
    value = raw.strip()
    if "://" not in value:
        return str(_absolute(Path(value)))
    parts = urlsplit(value)
    if parts.scheme == "s3" and parts.netloc and _BUCKET_RE.fullmatch(parts.netloc):
        return value
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path.startswith("/"):
        return value
    raise ValueError(_ARTIFACTS_EXPECTED)


def _check_endpoint(raw: str) -> str:
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


_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
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
    "database_url": _validated(_check_database_url, _redact_password),
    "database_owner_url": _validated(_check_owner_url, _redact_password),
    "artifacts_url": _validated(_check_artifacts_url),
    "s3_endpoint": _validated(_check_endpoint),
    "api_max_upload_bytes": _parse_size,
    "webhook_signing_key": _parse_secret,
    "webhook_allow_ips": _parse_ips,
    "webhook_max_attempts": _parse_attempts,
}
