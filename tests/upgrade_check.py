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
# What the throw-away project needs to resolve and install Forge itself.
_PROJECT_FILES = ("pyproject.toml", "uv.lock", "README.md")
_PROJECT_DIRS = ("schemas", "compiler", "activities", "workflows", "workers")


def _versions(lock: Path) -> dict[str, str]:
    data = tomllib.loads(lock.read_text(encoding="utf-8"))
    return {p["name"]: p.get("version", "?") for p in data.get("package", [])}


def _run(name: str, argv: list[str], env: dict[str, str], results: dict[str, int]) -> None:
    print(f"\n== {name}: {' '.join(argv)}", flush=True)
    results[name] = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", required=True)
    parser.add_argument("--python", default="python3")
    parser.add_argument("--workers", default="4")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    with tempfile.TemporaryDirectory(prefix="forge-upgrade-check-") as tmp:
        work = Path(tmp) / "project"
        work.mkdir()
        for name in _PROJECT_FILES:
            shutil.copy2(ROOT / name, work / name)
        for name in _PROJECT_DIRS:
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
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
        before, after = _versions(ROOT / "uv.lock"), _versions(work / "uv.lock")
        moved = {n: (before.get(n, "-"), v) for n, v in after.items() if before.get(n) != v}
        moved |= {n: (v, "-") for n, v in before.items() if n not in after}
        venv = Path(tmp) / "venv"
        sync = subprocess.run(
            [args.uv, "sync", "--frozen", "--extra", "dev", "--python", args.python, "--quiet"],
            cwd=work,
            env=env | {"UV_PROJECT_ENVIRONMENT": str(venv)},
            check=False,
        )
        if sync.returncode != 0:
            return 2
        # The checkout's sources on the throw-away venv: Forge is imported from ROOT, its
        # dependencies from the upgraded venv.
        test_env = env | {"PYTHONPATH": str(ROOT), "PATH": f"{venv / 'bin'}:{env['PATH']}"}
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
