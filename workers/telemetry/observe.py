"""What a Forge process turns on for metrics and logs while it runs (worker, API)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from ipaddress import ip_address
from typing import TYPE_CHECKING

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.settings import Settings
from workers.settings_metrics import LogFormat
from workers.telemetry.logs import configure_logging

if TYPE_CHECKING:
    from workers.telemetry.metrics import ProcessMetrics

__all__ = ["MetricsPortError", "observed"]


class MetricsPortError(ForgeError):
    """FORGE_METRICS_PORT (on FORGE_METRICS_ADDRESS) names a port this process cannot listen on."""

    code = ErrorCode.SETTINGS_INVALID


@contextlib.asynccontextmanager
async def observed(
    settings: Settings, kind: str, log_format: str | None = None
) -> AsyncIterator[str | None]:
    """Log in the chosen format; record metrics while the block runs when anything reads them.

    Metrics are recorded when FORGE_METRICS_PORT is set (served at /metrics) or when
    FORGE_TELEMETRY=otlp (exported by OTLP, with or without an endpoint); otherwise nothing
    is installed. Yields the /metrics URL (None without an endpoint). Enter it before the first
    Temporal client connects: that client's runtime then feeds Temporal's metrics to the
    provider.
    """
    chosen: LogFormat = "json" if (log_format or settings.log_format) == "json" else "text"
    if chosen == "json":  # text: Python's default output, as before
        configure_logging("json")
    if settings.metrics_port is None and settings.telemetry != "otlp":
        yield None
        return
    # Only here: with neither an endpoint nor OTLP the OpenTelemetry SDK is never loaded.
    from workers.telemetry.metrics import build_metrics

    serving = settings.metrics_port is not None
    process = build_metrics(f"forge-{kind}", settings=settings, prometheus=serving)
    try:
        endpoint = None
        if serving:
            endpoint = _serve(process, settings, kind)
        process.install()  # once the port is taken: a refused one changes nothing
        async with process.temporal_bridge():
            yield endpoint
    finally:
        process.close()  # the OTLP reader's last export: what was recorded since the previous


def _serve(process: ProcessMetrics, settings: Settings, kind: str) -> str:
    """Serve /metrics as FORGE_METRICS_ADDRESS and FORGE_METRICS_PORT say; its URL."""
    assert settings.metrics_port is not None
    address = settings.metrics_address
    try:
        port = process.serve(settings.metrics_port, settings.home, kind, address)
    except OSError as exc:
        raise MetricsPortError(
            f"FORGE_METRICS_PORT={settings.metrics_port}, FORGE_METRICS_ADDRESS={address}: "
            f"cannot serve /metrics there ({exc.strerror or exc})",
            hint="choose a free port, or 0 for one the system picks, on an address of this host",
        ) from None
    # An address of every interface is reached on this host as localhost.
    host = "localhost" if ip_address(address).is_unspecified else address
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"
