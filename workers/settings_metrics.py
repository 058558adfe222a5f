"""Metrics and logs of a Forge process: FORGE_METRICS_PORT, FORGE_METRICS_ADDRESS, FORGE_LOG_FORMAT.

workers/settings.py merges these into Settings; workers/telemetry/metrics.py serves /metrics on
the address and port and workers/telemetry/logs.py writes the log format (docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from workers.settings_env import SettingsError

__all__ = ["LOG_FORMATS", "LogFormat", "METRICS_ENV_VARS", "METRICS_PARSERS"]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

# Settings field -> FORGE_* variable (merged into workers.settings.ENV_VARS).
METRICS_ENV_VARS: Mapping[str, str] = {
    "metrics_port": "FORGE_METRICS_PORT",
    "metrics_address": "FORGE_METRICS_ADDRESS",
    "log_format": "FORGE_LOG_FORMAT",
}


def _parse_metrics_port(variable: str, raw: str) -> int:
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise SettingsError(
            variable,
            raw,
            "a TCP port from 1 to 65535 for /metrics, or 0 for one the system chooses "
            "(unset: no /metrics endpoint)",
        )
    return value


def _parse_metrics_address(variable: str, raw: str) -> str:
    # An IP literal, not a host name: the listener binds it as given, before any resolver.
    import ipaddress

    try:
        return str(ipaddress.ip_address(raw.strip().removeprefix("[").removesuffix("]")))
    except ValueError:
        raise SettingsError(
            variable,
            raw,
            "the IP address /metrics listens on, e.g. 127.0.0.1 (loopback only) or 0.0.0.0 "
            "(all IPv4 interfaces, the default) or :: (all interfaces)",
        ) from None


def _parse_log_format(variable: str, raw: str) -> LogFormat:
    value = raw.strip().lower()
    if value == "json":
        return "json"
    if value == "text":
        return "text"
    raise SettingsError(variable, raw, "text or json (unset: text)")


METRICS_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "metrics_port": _parse_metrics_port,
    "metrics_address": _parse_metrics_address,
    "log_format": _parse_log_format,
}
