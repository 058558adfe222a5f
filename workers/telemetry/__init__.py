"""Process-level OpenTelemetry setup: each entry point installs the providers once.

With FORGE_TELEMETRY=off (the default) nothing here installs anything, and every span and
instrument Forge records stays the OpenTelemetry API's no-op.
"""
