"""What a Forge process turns on for metrics and logs while it runs (worker, API)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from workers.settings import Settings
from workers.settings_metrics import LogFormat
from workers.telemetry.logs import configure_logging
from workers.telemetry.metrics import install_metrics

__all__ = ["observed"]


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
    process = install_metrics(f"forge-{kind}")
    try:
        port = process.serve(settings.metrics_port, settings.home, kind)
        async with process.temporal_bridge():
            yield f"http://localhost:{port}/metrics"
    finally:
        process.close()
