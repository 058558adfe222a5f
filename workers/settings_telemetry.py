"""Telemetry: FORGE_TELEMETRY and the standard OTEL_* variables Forge honours.

workers/settings.py merges these into Settings; workers/telemetry/ turns them into the
OpenTelemetry SDK's providers, passing each value explicitly (the SDK reads no environment of
its own for what is set here). Reference: docs/observability.md, "Configuration".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from workers.settings_env import SettingsError

__all__ = [
    "SAMPLERS",
    "TELEMETRY_ENV_VARS",
    "TelemetryContent",
    "TELEMETRY_PARSERS",
    "TelemetryMode",
    "OtlpProtocol",
]

TelemetryMode = Literal["off", "console", "otlp"]
# Whether model-call spans carry the prompt and the response: never unmasked (docs/observability.md,
# "What never leaves").
TelemetryContent = Literal["off", "masked"]
OtlpProtocol = Literal["http/protobuf", "grpc"]

# Settings field -> variable (merged into workers.settings.ENV_VARS).
TELEMETRY_ENV_VARS: Mapping[str, str] = {
    "telemetry": "FORGE_TELEMETRY",
    "otel_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT",
    "otel_protocol": "OTEL_EXPORTER_OTLP_PROTOCOL",
    "otel_service_name": "OTEL_SERVICE_NAME",
    "otel_resource_attributes": "OTEL_RESOURCE_ATTRIBUTES",
    "otel_traces_sampler": "OTEL_TRACES_SAMPLER",
    "otel_traces_sampler_arg": "OTEL_TRACES_SAMPLER_ARG",
    "telemetry_content": "FORGE_TELEMETRY_CONTENT",
    "otel_metric_export_interval": "OTEL_METRIC_EXPORT_INTERVAL",
}

# The OpenTelemetry specification's built-in samplers (its names, its default).
SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)


def _parse_mode(variable: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("off", "console", "otlp"):
        raise SettingsError(
            variable, raw, "off (the default: nothing recorded), console or otlp (to OTEL_*)"
        )
    return value


def _parse_endpoint(variable: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if not value.startswith(("http://", "https://")) or "://" == value[-3:]:
        raise SettingsError(
            variable, raw, "the OTLP receiver's base URL, e.g. http://localhost:4318"
        )
    return value


def _parse_protocol(variable: str, raw: str) -> str:
    value = raw.strip()
    if value not in ("http/protobuf", "grpc"):
        raise SettingsError(variable, raw, "http/protobuf (the default) or grpc")
    return value


def _parse_service_name(variable: str, raw: str) -> str:
    return raw.strip()


def _parse_resource_attributes(variable: str, raw: str) -> tuple[tuple[str, str], ...]:
    # The specification's form: key=value pairs, comma-separated, values percent-encoded.
    from urllib.parse import unquote

    pairs: list[tuple[str, str]] = []
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SettingsError(
                variable,
                raw,
                "comma-separated key=value pairs, e.g. deployment.environment=prod,team=ops",
            )
        pairs.append((key.strip(), unquote(value.strip())))
    return tuple(pairs)


def _parse_sampler(variable: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in SAMPLERS:
        raise SettingsError(variable, raw, f"one of {', '.join(SAMPLERS)}")
    return value


def _parse_sampler_arg(variable: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise SettingsError(
            variable, raw, "the fraction of traces a traceidratio sampler keeps, 0 to 1, e.g. 0.25"
        )
    return value


def _parse_content(variable: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("off", "masked"):
        raise SettingsError(
            variable,
            raw,
            "off (the default: no prompt or response text on spans) or masked (the guard masks "
            "them, then they are cut)",
        )
    return value


def _parse_metric_export_interval(variable: str, raw: str) -> int:
    # The specification's unit: milliseconds between two OTLP metric exports.
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        value = 0
    if value < 1:
        raise SettingsError(
            variable,
            raw,
            "milliseconds between OTLP metric exports, a whole number from 1, e.g. 60000 "
            "(the default)",
        )
    return value


TELEMETRY_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "telemetry": _parse_mode,
    "otel_endpoint": _parse_endpoint,
    "otel_protocol": _parse_protocol,
    "otel_service_name": _parse_service_name,
    "otel_resource_attributes": _parse_resource_attributes,
    "otel_traces_sampler": _parse_sampler,
    "otel_traces_sampler_arg": _parse_sampler_arg,
    "telemetry_content": _parse_content,
    "otel_metric_export_interval": _parse_metric_export_interval,
}
