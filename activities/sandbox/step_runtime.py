"""The sealed step runtime: the locked, minimal Python environment that step code runs in.

Step code never sees the worker's interpreter, the project's venv or the checkout. It runs on
Debian's `/usr/bin/python3.11` (under /usr, which every sandbox binds read-only; its stdlib
says nothing about the host) with a venv at a neutral, root-owned path, `/opt/forge/runtime`,
bound read-only at the same path. The venv holds exactly `runtime/requirements.lock` (compiled
from `runtime/requirements.in` by `make lock`) and, in `bridge/`, the tool bridge's client.
`forge-runtime.json` in it records the digest of what it was built from; the sandbox refuses a
runtime that is missing or was built from another lock, naming the command that fixes it.

Build it with `python -m activities.sandbox.step_runtime build --uv UV` (what `make runtime`
runs); it is a no-op when the runtime is current.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from activities.sandbox.client import forge_bridge

__all__ = [
    "BASE_PYTHON",
    "LOCK_FILE",
    "RUNTIME_DIR",
    "StepRuntime",
    "StepRuntimeError",
    "build",
    "expected_digest",
    "step_runtime",
]

RUNTIME_DIR = Path("/opt/forge/runtime")
# Debian's interpreter, not the one Forge runs on: that one (pyenv, a venv) lives under a home
# directory or the checkout, is not relocatable, and would tell step code where the host keeps
# things. /usr/bin/python3.11 needs nothing outside /usr, and uv builds a venv on it without
# ensurepip (Debian ships that separately).
BASE_PYTHON = Path("/usr/bin/python3.11")
LOCK_FILE = Path(__file__).parent / "runtime" / "requirements.lock"
MANIFEST = "forge-runtime.json"
# Bump when the way a runtime is built changes, so that `make runtime` rebuilds old ones.
_BUILD_RECIPE = "2: venv, pip sync --compile-bytecode --link-mode copy, bridge/, junk removed"
_BRIDGE_SUBDIR = "bridge"
_BUILD_COMMAND = "make runtime"


# Not a ForgeError: this module also runs on its own (`python -m activities.sandbox.step_runtime
# build`, by `make runtime`) with none of Forge's other packages importable. The runner turns
# it into SandboxUnavailable.
class StepRuntimeError(RuntimeError):
    """The step runtime is missing, stale or cannot be built; the message says what to run.

    `what` is what was found and `fix` (when known) what to do; the message is both.
    """

    def __init__(self, what: str, fix: str | None = None) -> None:
        self.what = what
        self.fix = fix
        super().__init__(f"{what}: {fix}" if fix else what)


# How to build a runtime that is missing or stale, in a checkout or an installed prefix.
_REBUILD = (
    f"run `{_BUILD_COMMAND}` in the Forge checkout (as root: `sudo {_BUILD_COMMAND}`), or "
    "`deploy/install.sh PREFIX` for an installed Forge (FORGE_STEP_RUNTIME=PREFIX/runtime)"
)


@dataclass(frozen=True)
class StepRuntime:
    """A built runtime: where its interpreter, scripts and bridge client are."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def bridge_dir(self) -> Path:
        """The directory holding forge_bridge.py (on PYTHONPATH for steps that may call tools)."""
        return self.root / _BRIDGE_SUBDIR


@functools.cache
def expected_digest() -> str:
    """sha256 over what a runtime is built from: the base interpreter, the lock, the client."""
    digest = hashlib.sha256()
    for part in (
        _BUILD_RECIPE.encode(),
        str(BASE_PYTHON).encode(),
        LOCK_FILE.read_bytes(),
        Path(forge_bridge.__file__).read_bytes(),
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _manifest(root: Path) -> dict[str, object] | None:
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def step_runtime(root: Path = RUNTIME_DIR) -> StepRuntime:
    """The built runtime at `root`, checked against this checkout's lock.

    Raises:
        StepRuntimeError: It is not built, or was built from another lock or bridge client.
    """
    manifest = _manifest(root)
    runtime = StepRuntime(root)
    if manifest is None or not runtime.python.exists():
        raise StepRuntimeError(
            f"the sealed step runtime is not built ({root / MANIFEST} is missing)", _REBUILD
        )
    if manifest.get("digest") != expected_digest():
        raise StepRuntimeError(
            f"the sealed step runtime at {root} was built from another lock or bridge client "
            "than this Forge's",
            _REBUILD,
        )
    return runtime


def _uv(uv: str, *args: str) -> None:
    # The caller's environment passes through (proxy and CA settings reach the registries by
    # it); uv's own configuration files and Python downloads are switched off by flags.
    argv = [uv, *args, "--no-config", "--no-python-downloads"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise StepRuntimeError(f"`uv {' '.join(args)}` failed: {done.stderr.strip()[-2000:]}")


def _packages(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for meta in (root / "lib").glob("python3*/site-packages/*.dist-info/METADATA"):
        head = meta.read_text("utf-8").splitlines()[:10]
        fields = dict(line.split(": ", 1) for line in head if ": " in line)
        if "Name" in fields and "Version" in fields:
            found[fields["Name"].lower()] = fields["Version"]
    return dict(sorted(found.items()))


def build(uv: str, root: Path = RUNTIME_DIR) -> bool:
    """Build the runtime at `root` from the lock; False when it was already current.

    Raises:
        StepRuntimeError: The base interpreter is missing, `root` cannot be written, or uv fails.
    """
    current = _manifest(root)
    if current is not None and current.get("digest") == expected_digest():
        return False
    if not BASE_PYTHON.is_file():
        raise StepRuntimeError(
            f"{BASE_PYTHON} is missing: the step runtime is built on Debian's Python 3.11; "
            "install it with `apt-get install python3.11`"
        )
    # Every file readable by the unprivileged sandbox user and writable by none.
    previous = os.umask(0o022)
    try:
        _build(uv, root)
    finally:
        os.umask(previous)
    return True


def _build(uv: str, root: Path) -> None:
    try:
        root.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(mode=0o755)
        root.chmod(0o755)  # whatever umask the caller had
    except PermissionError:
        raise StepRuntimeError(
            f"cannot write {root}: the sealed step runtime lives at a neutral, root-owned path; "
            f"run `sudo {_BUILD_COMMAND}` once (later runs find it current and change nothing)"
        ) from None
    _uv(uv, "venv", "--quiet", "--no-project", "--python", str(BASE_PYTHON), str(root))
    _uv(
        uv,
        "pip",
        "sync",
        "--quiet",
        "--require-hashes",
        "--no-build",
        "--link-mode",
        "copy",  # hard links would share inodes with uv's cache under a home directory
        "--compile-bytecode",  # mounted read-only: steps could not cache what they compile
        "--python",
        str(root / "bin" / "python"),
        str(LOCK_FILE),
    )
    bridge = root / _BRIDGE_SUBDIR
    bridge.mkdir(mode=0o755)
    shutil.copyfile(forge_bridge.__file__, bridge / "forge_bridge.py")
    compiled = subprocess.run(
        [str(root / "bin" / "python"), "-m", "compileall", "-q", str(bridge)],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0:
        raise StepRuntimeError(f"cannot compile the bridge client: {compiled.stdout.strip()}")
    # Nothing inside a sandbox activates a venv, and uv's lock file is world-writable.
    for junk in {*(root / "bin").glob("activate*"), *(root / "bin").glob("*.bat")}:
        junk.unlink()
    for name in (".lock", ".gitignore", "CACHEDIR.TAG"):
        (root / name).unlink(missing_ok=True)
    manifest = {
        "digest": expected_digest(),
        "base_python": str(BASE_PYTHON),
        "packages": _packages(root),
    }
    tmp = root / f".{MANIFEST}.part"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    tmp.rename(root / MANIFEST)  # last: a half-built runtime has no manifest and is refused


def main(argv: list[str] | None = None) -> int:
    """`python -m activities.sandbox.step_runtime build|check`: exit 2 with one line on failure."""
    parser = argparse.ArgumentParser(prog="step_runtime", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("build", "check"))
    parser.add_argument("--uv", default="uv", help="the uv binary (build only)")
    parser.add_argument("--root", type=Path, default=RUNTIME_DIR)
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            step_runtime(args.root)
            print(f"step runtime at {args.root}: current")
        elif build(args.uv, args.root):
            print(f"step runtime built at {args.root}: {', '.join(_packages(args.root))}")
    except StepRuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
