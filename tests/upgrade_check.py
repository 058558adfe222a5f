"""`make upgrade-check`: lint and test Forge on the newest versions pyproject.toml allows.

Resolves the newest allowed versions into a throw-away directory (the committed uv.lock is
copied there, upgraded, and compared), builds a venv from that lock, runs ruff, mypy and the
test suite with it, and reports which packages would move and what broke. Nothing in the
checkout changes: to take the upgrade, run `make lock UPGRADE=1` and commit the new lock.
Exit status: 0 when everything passed on the newest versions, 1 when something broke, 2 when
the check itself could not run. Runs with the standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the throw-away project needs to resolve the newest versions (metadata is static).
_PROJECT_FILES = ("pyproject.toml", "uv.lock")
_PROJECT_VARIABLES = frozenset(
    {"UV_PROJECT_ENVIRONMENT", "UV_FROZEN", "UV_LOCKED", "UV_NO_SYNC", "VIRTUAL_ENV"}
)
RUNTIME_SPEC = ROOT / "activities" / "sandbox" / "runtime"
LAUNCHER_C = str(ROOT / "activities" / "sandbox" / "launcher.c")


def _versions(lock: Path) -> dict[str, str]:
    data = tomllib.loads(lock.read_text(encoding="utf-8"))
    return {p["name"]: p.get("version", "?") for p in data.get("package", [])}


def lock_pins(text: str) -> dict[str, str]:
    """{package: version} of a requirements lock (`name==version ; markers \\` lines)."""
    pins = {}
    for line in text.splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, _, rest = line.partition("==")
            pins[name.strip().lower()] = rest.split()[0].rstrip(";")
    return pins


def _runtime_moves(uv: str, tmp: Path, env: dict[str, str]) -> dict[str, tuple[str, str]]:
    """How the step runtime's lock would move; its packages are exercised only once rebuilt."""
    out = tmp / "runtime.lock"
    subprocess.run(
        [
            uv,
            "pip",
            "compile",
            str(RUNTIME_SPEC / "requirements.in"),
            "--universal",
            "--quiet",
            "--python-version",
            "3.11",
            "--no-header",
            "--upgrade",
            "-o",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )
    before = lock_pins((RUNTIME_SPEC / "requirements.lock").read_text(encoding="utf-8"))
    after = lock_pins(out.read_text(encoding="utf-8"))
    return {n: (before.get(n, "-"), v) for n, v in after.items() if before.get(n) != v}


def _run(name: str, argv: list[str], env: dict[str, str], results: dict[str, int]) -> None:
    print(f"\n== {name}: {' '.join(argv)}", flush=True)
    results[name] = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", required=True)
    parser.add_argument("--python", default="python3")
    parser.add_argument("--workers", default="4")
    args = parser.parse_args()
    args.uv = str(Path(args.uv).resolve())  # the commands below run in other directories
    # The caller's uv settings stay (an index mirror, say), except those that would point the
    # throw-away project at the checkout's venv or forbid the upgrade.
    env = {k: v for k, v in os.environ.items() if k not in _PROJECT_VARIABLES}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    with tempfile.TemporaryDirectory(prefix="forge-upgrade-check-") as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        for name in _PROJECT_FILES:
            shutil.copy2(ROOT / name, work / name)
        lock = subprocess.run(
            [args.uv, "lock", "--upgrade", "--python", args.python],
            cwd=work,
            env=env,
            check=False,
            capture_output=True,
            text=True,
        )
        if lock.returncode != 0:
            print(f"upgrade-check: cannot resolve the newest versions:\n{lock.stderr}")
            return 2
        runtime_moves = _runtime_moves(args.uv, Path(tmp), env)
        before, after = _versions(ROOT / "uv.lock"), _versions(work / "uv.lock")
        moved = {n: (before.get(n, "-"), v) for n, v in after.items() if before.get(n) != v}
        moved |= {n: (v, "-") for n, v in before.items() if n not in after}
        venv = Path(tmp) / "venv"
        sync = [args.uv, "sync", "--frozen", "--no-install-project", "--extra", "dev", "--quiet"]
        # The dependencies from the upgraded lock, then this checkout itself, editable, on top.
        install = [args.uv, "pip", "install", "--quiet", "--no-deps", "--editable", str(ROOT)]
        for argv, cwd in (
            ([*sync, "--python", args.python], work),
            ([*install, "--python", str(venv / "bin" / "python")], ROOT),
        ):
            done = subprocess.run(
                argv, cwd=cwd, env=env | {"UV_PROJECT_ENVIRONMENT": str(venv)}, check=False
            )
            if done.returncode != 0:
                return 2
        # The native sandbox launcher next to the venv's interpreter, as `make` builds it.
        launcher = subprocess.run(
            ["cc", "-O2", "-o", str(venv / "bin" / "forge-sandbox-launcher"), LAUNCHER_C],
            check=False,
        )
        if launcher.returncode != 0:
            return 2
        test_env = env | {"PATH": f"{venv / 'bin'}:{env['PATH']}"}
        bin_ = venv / "bin"
        results: dict[str, int] = {}
        _run("ruff", [str(bin_ / "ruff"), "check", "--no-cache", "."], test_env, results)
        mypy_targets = ["schemas", "compiler", "workers", "activities", "workflows"]
        mypy_cache = ["--cache-dir", str(Path(tmp) / "mypy-cache")]
        _run("mypy", [str(bin_ / "mypy"), *mypy_cache, *mypy_targets], test_env, results)
        pytest_argv = [str(bin_ / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        _run("pytest", [*pytest_argv, "-n", args.workers], test_env, results)
    print("\n== upgrade-check report")
    if moved:
        print("versions that would change (locked -> newest allowed):")
        for name, (old, new) in sorted(moved.items()):
            print(f"  {name:32} {old:>14} -> {new}")
    else:
        print("uv.lock already holds the newest allowed versions")
    if runtime_moves:
        print("step runtime (activities/sandbox/runtime/requirements.lock), not tested here:")
        for name, (old, new) in sorted(runtime_moves.items()):
            print(f"  {name:32} {old:>14} -> {new}")
    broken = [name for name, code in results.items() if code != 0]
    for name, code in results.items():
        print(f"  {name:8} {'ok' if code == 0 else f'FAILED (exit {code})'}")
    if broken:
        print(f"upgrade-check: {', '.join(broken)} fail on the newest versions; see above")
        return 1
    print("upgrade-check: everything passes; take it with `make lock UPGRADE=1` and commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
