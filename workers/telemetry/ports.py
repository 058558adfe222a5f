"""Where a process records the port its /metrics listens on (read by `forge dev status`).

Apart from metrics.py so that reading a recorded port never loads the OpenTelemetry SDK.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["metrics_port_file", "recorded_metrics_port"]


def metrics_port_file(home: Path, pid: int) -> Path:
    """Where the process `pid` of FORGE_HOME `home` records the port its /metrics listens on."""
    return home / "metrics" / f"{pid}.json"


def recorded_metrics_port(home: Path, pid: int) -> int | None:
    """The /metrics port process `pid` recorded, or None (no endpoint, or not started yet)."""
    try:
        data = json.loads(metrics_port_file(home, pid).read_text())
    except (FileNotFoundError, ValueError):
        return None
    port = data.get("port") if isinstance(data, dict) else None
    return port if isinstance(port, int) else None
