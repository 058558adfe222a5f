"""The native sandbox launcher (launcher.c): where it is and how its arguments are spelled."""

import os
import sys
from pathlib import Path
from typing import Any

NATIVE_NAME = "forge-sandbox-launcher"


def native_launcher() -> Path | None:
    """The launcher binary `make` builds next to the interpreter, if it is there."""
    path = Path(sys.executable).parent / NATIVE_NAME
    return path if path.is_file() and os.access(path, os.X_OK) else None


def native_argv(binary: Path, spec: dict[str, Any]) -> list[str]:
    """The spec as launcher.c reads it (see the argument grammar at the top of that file)."""
    stage = spec.get("stage") or None
    binds = [str(x) for pair in (stage["binds"] if stage else []) for x in pair]
    limits = [str(x) for triple in spec["rlimits"] for x in triple]
    uid, gid = spec["drop_to"] if spec.get("drop_to") else (-1, -1)
    env = [f"{k}={v}" for k, v in spec["env"].items()]
    return [
        str(binary),
        str(spec["report_fd"]),
        str(spec["parent_pid"]),
        "1" if spec["reap"] else "0",
        stage["dir"] if stage else "-",
        str(len(binds) // 2),
        *binds,
        str(len(limits) // 3),
        *limits,
        str(uid),
        str(gid),
        str(len(env)),
        *env,
        "--",
        *spec["argv"],
    ]
