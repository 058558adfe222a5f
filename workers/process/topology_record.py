"""FORGE_HOME/topology.json: what `forge dev up --workers` started, written as each starts."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from workers.process.devserver import TopologyError
from workers.process.procs import alive, start_ticks

__all__ = [
    "Kind",
    "ProcessRecord",
    "Shape",
    "TopologyRecord",
    "read_record",
    "remove_record",
    "shown",
    "write_record",
]

Kind = Literal["postgres", "s3", "api", "worker"]
_RECORD = "topology.json"


class Shape(BaseModel):
    """What `up` was asked to start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workers: int
    postgres: bool = False
    s3: bool = False
    api: bool = False

    def describe(self) -> str:
        parts = [f"{self.workers} worker(s)"]
        parts += [name for name in ("postgres", "s3", "api") if getattr(self, name)]
        return ", ".join(parts)


class ProcessRecord(BaseModel):
    """One started process: how to find it again and where its log is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Kind
    pid: int
    port: int | None
    log: Path
    # When the pid started (/proc/PID/stat): a recycled pid, someone else's, starts later.
    start_ticks: int | None

    def owned(self) -> bool:
        """Whether the recorded process still runs (not a later one under its pid)."""
        return (
            alive(self.pid)
            and self.start_ticks is not None
            and start_ticks(self.pid) == self.start_ticks
        )


class TopologyRecord(BaseModel):
    """FORGE_HOME/topology.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shape: Shape
    started_at: datetime
    temporal_address: str
    temporal_pid: int
    temporal_log: Path
    # Whether this `up` started the dev server: a failed `up` leaves one it found running.
    temporal_started: bool = True
    environment: dict[str, str]
    processes: tuple[ProcessRecord, ...] = ()

    def adding(self, process: ProcessRecord) -> TopologyRecord:
        return self.model_copy(update={"processes": (*self.processes, process)})


def read_record(home: Path) -> TopologyRecord | None:
    """The recorded topology of FORGE_HOME `home`, or None.

    Raises:
        TopologyError: The record is unreadable.
    """
    path = home / _RECORD
    try:
        return TopologyRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError as err:
        raise TopologyError(
            f"{path} is not a valid topology record ({err.error_count()} errors); stop its "
            "processes by hand (their pids are in it), then delete the file"
        ) from None


def write_record(home: Path, record: TopologyRecord) -> None:
    """Replace the record of `home` atomically: a concurrent `status` never reads half of one.

    Its environment holds the database passwords: the file is its owner's alone (0600).
    """
    path = home / _RECORD
    tmp = path.with_suffix(".json.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(record.model_dump_json(indent=2) + "\n")
    tmp.replace(path)


def shown(environment: dict[str, str]) -> dict[str, str]:
    """`environment` as `up` and `status` print it: passwords and secret keys as ***."""
    hidden = {}
    for name, value in environment.items():
        if name == "AWS_SECRET_ACCESS_KEY":
            value = "***"
        elif "://" in value and (password := urlsplit(value).password):
            value = value.replace(f":{password}@", ":***@", 1)
        hidden[name] = value
    return hidden


def remove_record(home: Path) -> None:
    """Forget the topology of `home` (its processes are stopped, or never started)."""
    (home / _RECORD).unlink(missing_ok=True)
