"""Process-level OpenTelemetry setup: each entry point installs the providers once.

One concern per module: tracing.py (traces), metrics.py (metrics), logs.py (log lines). With
FORGE_TELEMETRY=off and no FORGE_METRICS_PORT (the defaults) nothing here installs anything, and
every span and instrument Forge records stays the OpenTelemetry API's no-op.
"""
