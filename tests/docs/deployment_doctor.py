"""`forge doctor` as each walkthrough of docs/deployment.md runs it, on the topology as processes.

The topology (`forge dev up --workers 1 --postgres --s3 --api`) stands in for the services a
deployment reaches. Doctor runs with the deployment's own variables; only *where* each service
is (and the container's own paths) comes from the topology. Its output then names each place
back as the deployment names it (`127.0.0.1:41235` reads `temporal:7233`), so what a page
shows can be compared with what doctor printed, line by line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from tests.docs.shown import ROOT, Shown, shown_commands

# Where a service is, and the container's own paths: the topology's, whatever the deployment says.
WHERE = (
    "FORGE_TEMPORAL_ADDRESS",
    "FORGE_DATABASE_URL",
    "FORGE_DATABASE_OWNER_URL",
    "FORGE_S3_ENDPOINT",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "FORGE_HOME",
    "FORGE_WORKSPACE_ROOT",
)
# How doctor names each place in its output, per variable.
_PLACES = {
    "FORGE_TEMPORAL_ADDRESS": lambda value: value,
    "FORGE_S3_ENDPOINT": lambda value: value,
    "FORGE_DATABASE_URL": lambda value: _database_place(value),
}


@dataclass(frozen=True)
class Deployment:
    """A deployment's variables, and how to read doctor's output run on the topology as its."""

    env: dict[str, str]  # the deployment's own variables, places replaced by the topology's
    renames: dict[str, str]  # topology's place -> the deployment's, longest first

    def named_back(self, printed: str) -> str:
        for real, shown in self.renames.items():
            printed = printed.replace(real, shown)
        return printed


def on_topology(own: Mapping[str, str], topology: Mapping[str, str]) -> Deployment:
    """`own` (a deployment's variables) pointed at the topology's services (`topology`: the
    environment `forge dev env` gives its processes, on this shell's)."""
    env = {k: v for k, v in topology.items() if not k.startswith(("FORGE_", "AWS_"))}
    env |= {k: v for k, v in own.items() if k not in WHERE}
    env |= {k: topology[k] for k in WHERE if k in topology}
    renames = {
        place(topology[name]): place(own[name])
        for name, place in _PLACES.items()
        if name in own and name in topology
    }
    ordered = dict(sorted(renames.items(), key=lambda kv: -len(kv[0])))
    return Deployment(env, ordered)


def doctor_block(page: Path, marker: str) -> Shown:
    """The one command of `page` whose text holds `marker`: its doctor, with output shown."""
    [shown] = [s for s in shown_commands(page) if marker in s.command]
    assert shown.output, f"{shown.source}: `{shown.command}` shows no output"
    return shown


def settings_block(page: Path, name: str) -> dict[str, str]:
    """The KEY=VALUE lines of the first fenced block of `page` that sets `name`."""
    block: list[str] | None = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if block is not None:
                pairs = dict(x.partition("=")[::2] for x in block if "=" in x)
                if name in pairs:
                    return {k.strip(): v.split()[0] for k, v in pairs.items()}
            block = [] if block is None else None
        elif block is not None and not line.lstrip().startswith("#"):
            block.append(line)
    raise AssertionError(f"{page.relative_to(ROOT)} has no block setting {name}")


def _database_place(url: str) -> str:
    parsed = make_url(url)
    return f"{parsed.host}:{parsed.port or 5432}/{parsed.database}"
