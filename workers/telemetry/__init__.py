"""Process-level OpenTelemetry setup of Forge entry points, one concern per module."""
