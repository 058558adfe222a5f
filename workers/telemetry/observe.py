"""What a Forge process turns on for metrics and logs while it runs (worker, API)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.settings import Settings
from workers.settings_metrics import LogFormat
from workers.telemetry.logs import configure_logging

__all__ = ["MetricsPortError", "observed"]


class MetricsPortError(ForgeError):
    """FORGE_METRICS_PORT names a port this process cannot listen on."""

    code = ErrorCode.SETTINGS_INVALID


@contextlib.asynccontextmanager
async def observed(
    settings: Settings, kind: str, log_format: str | None = None
) -> AsyncIterator[str | None]:
    """Log in the chosen format and, with FORGE_METRICS_PORT set, serve /metrics meanwhile.

    Yields the /metrics URL (None without an endpoint). Enter it before the first Temporal
    client connects: that client's runtime then feeds Temporal's metrics to the endpoint.
    """
    chosen: LogFormat = "json" if (log_format or settings.log_format) == "json" else "text"
    if chosen == "json":  # text: Python's default output, as before
        configure_logging("json")
    if settings.metrics_port is None:
        yield None
        return
    # Only here: with no endpoint the OpenTelemetry SDK is never loaded.
    from workers.telemetry.metrics import build_metrics

    process = build_metrics(f"forge-{kind}")
    try:
        try:
            port = process.serve(settings.metrics_port, settings.home, kind)
        except OSError as exc:
            raise MetricsPortError(
                f"FORGE_METRICS_PORT={settings.metrics_port}: cannot serve /metrics there "
                f"({exc.strerror or exc})",
                hint="choose a free port, or 0 for one the system picks",
            ) from None
        process.install()  # once the port is taken: a refused one changes nothing
        async with process.temporal_bridge():
            yield f"http://localhost:{port}/metrics"
    finally:
        process.close()
