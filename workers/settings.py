"""Forge settings: the one place the process environment is read, turned into a frozen model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretBytes,
    SecretStr,
    field_validator,
    model_validator,
)

from activities.sandbox.bwrap import host_path_problem
from activities.sandbox.step_runtime import RUNTIME_DIR
from compiler.addresses import IpAddress
from schemas import names
from schemas.bounds import PLAN_MAX_BYTES
from workers.settings_env import (
    DEFAULT_HOME,
    PARSERS,
    SettingsError,
    absolute,
    check_artifacts_url,
    check_build_id,
    check_database_url,
    check_deployment_name,
    check_endpoint,
    check_owner_url,
)
from workers.settings_metrics import METRICS_ENV_VARS, METRICS_PARSERS, LogFormat
from workers.settings_telemetry import (
    TELEMETRY_ENV_VARS,
    TELEMETRY_PARSERS,
    OtlpProtocol,
    TelemetryContent,
    TelemetryMode,
)
from workers.settings_temporal import (
    TEMPORAL_ENV_VARS,
    TEMPORAL_PARSERS,
    check_temporal_values,
    temporal_values,
)
from workers.settings_worker import (
    MAX_SLOTS,
    WORKER_ENV_VARS,
    WORKER_PARSERS,
    default_activity_slots,
)

__all__ = [
    "ENV_VARS",
    "Settings",
    "SettingsError",
    "default_workspace_root",
    "process_environment",
]

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
    "api_max_body_bytes": "FORGE_API_MAX_BODY_BYTES",
    "webhook_signing_key": "FORGE_WEBHOOK_SIGNING_KEY",
    "webhook_allow_ips": "FORGE_WEBHOOK_ALLOW_IPS",
    "webhook_max_attempts": "FORGE_WEBHOOK_MAX_ATTEMPTS",
    "deployment_name": "FORGE_DEPLOYMENT_NAME",
    "build_id": "FORGE_BUILD_ID",
    "step_runtime": "FORGE_STEP_RUNTIME",
    **TEMPORAL_ENV_VARS,
    **WORKER_ENV_VARS,
    **METRICS_ENV_VARS,
    **TELEMETRY_ENV_VARS,
}
_PARSERS = {
    **PARSERS,
    **TEMPORAL_PARSERS,
    **WORKER_PARSERS,
    **METRICS_PARSERS,
    **TELEMETRY_PARSERS,
}


def process_environment() -> dict[str, str]:
    """This process's environment, for a child it starts (`forge dev up`'s workers and API).

    The child reads its own settings from it; Forge's processes read nothing else of it.
    """
    return dict(os.environ)


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

    home: Path = Field(default_factory=lambda: absolute(Path(DEFAULT_HOME)))
    temporal_address: str | None = None
    namespace: str = "default"
    task_queue: str = names.DEFAULT_TASK_QUEUE
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
    # The sealed step runtime every sandbox runs (deploy/install.sh builds it into PREFIX/runtime).
    step_runtime: Path = RUNTIME_DIR
    # Where a capsule run may read its inputs: local directories (the working directory when
    # unset) and S3 buckets (none when unset). Anything else, and file:// elsewhere, is refused.
    input_roots: tuple[Path, ...] = Field(default_factory=lambda: (Path.cwd(),))
    input_buckets: tuple[str, ...] = ()
    # The HTTP API: the largest upload it stores (POST /v1/uploads).
    api_max_upload_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    # ... and the largest body of any other request (a plan's own cap is the same figure).
    api_max_body_bytes: int = Field(default=PLAN_MAX_BYTES, ge=1)
    # Webhooks: the key every webhook's secret derives from (unset: one generated into
    # home/webhook-signing.key), the non-public IPs deliveries may reach (the operator's
    # choice; a tenant cannot widen it), and the attempts a delivery gets.
    webhook_signing_key: SecretStr | None = None
    webhook_allow_ips: tuple[IpAddress, ...] = ()
    webhook_max_attempts: int = Field(default=8, ge=1, le=100)
    # Worker versioning (docs/deployment.md, rolling upgrades): set, the workers register as
    # version build_id of this Temporal worker deployment and each run stays on the version it
    # started on. build_id unset: derived from the installed code (workers/process/versioning.py).
    deployment_name: str | None = None
    build_id: str | None = None
    # Reaching a Temporal cluster (workers/settings_temporal.py): TLS on when set, else when a
    # TLS file or an API key is (Temporal Cloud's rule); the key stays in its SecretStr.
    temporal_tls: bool | None = None
    # Each a PEM file, or its inline text from Temporal's *_DATA configuration (the key's in a
    # SecretBytes).
    temporal_tls_ca: Path | bytes | None = None
    temporal_tls_cert: Path | bytes | None = None
    temporal_tls_key: Path | SecretBytes | None = None
    temporal_tls_server_name: str | None = None
    temporal_api_key: SecretStr | None = None
    # How long connecting may take before the command fails naming the address.
    temporal_connect_timeout: float = Field(default=10.0, gt=0, le=600)
    # A worker's concurrency (workers/settings_worker.py, docs/scaling.md): activities at once
    # per task queue (unset: 4 per CPU core), workflow tasks at once, concurrent polls per task
    # type, and, when set, the host CPU use above which no new activity slot is issued
    # (Temporal's resource-based tuner, activity_slots its maximum).
    worker_activity_slots: int = Field(default_factory=default_activity_slots, ge=1, le=MAX_SLOTS)
    worker_workflow_slots: int = Field(default=100, ge=2, le=MAX_SLOTS)
    worker_pollers: int = Field(default=5, ge=2, le=MAX_SLOTS)
    worker_target_cpu: float | None = Field(default=None, gt=0, le=1)
    # Metrics and logs (workers/settings_metrics.py, docs/observability.md): the port a worker
    # serves /metrics on (0: one the system chooses, recorded for `forge dev status`; unset:
    # none), and the log line format (`forge worker --log-format` overrides it).
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    # The IP address /metrics binds (FORGE_METRICS_ADDRESS): all IPv4 interfaces by default.
    metrics_address: str = "0.0.0.0"
    log_format: LogFormat = "text"
    # Telemetry (workers/settings_telemetry.py, docs/observability.md): off installs nothing;
    # console prints spans; otlp exports to otel_endpoint (unset: the SDK's localhost default).
    telemetry: TelemetryMode = "off"
    otel_endpoint: str | None = None
    otel_protocol: OtlpProtocol = "http/protobuf"
    otel_service_name: str | None = None
    otel_resource_attributes: tuple[tuple[str, str], ...] = ()
    otel_traces_sampler: str = "parentbased_always_on"
    otel_traces_sampler_arg: float = Field(default=1.0, ge=0, le=1)
    # Model-call spans carry the prompt and response (GenAI conventions), masked then cut:
    # off (the default) records none (activities/telemetry_content.py).
    telemetry_content: TelemetryContent = "off"
    # Milliseconds between OTLP metric exports with FORGE_TELEMETRY=otlp (the spec's default).
    otel_metric_export_interval: int = Field(default=60_000, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _derive_store_locations(cls, data: Any) -> Any:
        # The embedded defaults live under home, so they follow FORGE_HOME unless set.
        if not isinstance(data, dict):
            return data
        home = absolute(Path(data.get("home") or DEFAULT_HOME))
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

    @model_validator(mode="after")
    def _temporal_tls_consistent(self) -> Settings:
        if self.temporal_tls is False and (
            self.temporal_tls_ca or self.temporal_tls_cert or self.temporal_tls_server_name
        ):
            raise ValueError("temporal_tls is off, yet a TLS CA, certificate or server name is set")
        if (self.temporal_tls_cert is None) != (self.temporal_tls_key is None):
            raise ValueError("temporal_tls_cert and temporal_tls_key go together or not at all")
        return self

    @property
    def temporal_tls_on(self) -> bool:
        """Whether Forge connects to Temporal over TLS (an API key implies it, as on Cloud)."""
        if self.temporal_tls is not None:
            return self.temporal_tls
        return any(
            (self.temporal_tls_ca, self.temporal_tls_cert, self.temporal_tls_server_name)
        ) or (self.temporal_api_key is not None)

    @field_validator("home")
    @classmethod
    def _homeabsolute(cls, value: Path) -> Path:
        # State files are found by path later, so a cwd change must not move them.
        return absolute(value)

    @field_validator("packs_path")
    @classmethod
    def _packsabsolute(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(absolute(p) for p in value)

    @field_validator("input_roots")
    @classmethod
    def _rootsabsolute(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        return tuple(absolute(p).resolve() for p in value)

    @field_validator("database_url")
    @classmethod
    def _database_url_valid(cls, value: str) -> str:
        return check_database_url(value)

    @field_validator("database_owner_url")
    @classmethod
    def _database_owner_url_valid(cls, value: str | None) -> str | None:
        return None if value is None else check_owner_url(value)

    @field_validator("artifacts_url")
    @classmethod
    def _artifacts_url_valid(cls, value: str) -> str:
        return check_artifacts_url(value)

    @field_validator("deployment_name")
    @classmethod
    def _deployment_name_valid(cls, value: str | None) -> str | None:
        return None if value is None else check_deployment_name(value)

    @field_validator("build_id")
    @classmethod
    def _build_id_valid(cls, value: str | None) -> str | None:
        return None if value is None else check_build_id(value)

    @field_validator("s3_endpoint")
    @classmethod
    def _s3_endpoint_valid(cls, value: str | None) -> str | None:
        return None if value is None else check_endpoint(value)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``FORGE_*`` variables; empty values count as unset.

        Args:
            environ: Variables to read; the process environment when omitted.

        Raises:
            SettingsError: A variable holds an invalid value (the message names it).
        """
        env = os.environ if environ is None else environ
        # Temporal's own configuration first; each FORGE_* variable set replaces its field.
        values: dict[str, Any] = temporal_values(env)
        for field, variable in ENV_VARS.items():
            raw = env.get(variable, "")
            if raw.strip():
                values[field] = _PARSERS[field](variable, raw)
        check_temporal_values(values, env)
        if "workspace_root" in values:
            home = absolute(Path(values.get("home") or DEFAULT_HOME))
            problem = _workspace_root_problem(values["workspace_root"], home)
            if problem is not None:
                raise SettingsError(
                    ENV_VARS["workspace_root"], str(values["workspace_root"]), problem
                )
        return cls(**values)
