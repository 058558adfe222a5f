"""`make demo` follows FORGE_HOME: its data and the outputs it summarizes are under that home."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def demo_commands(**env: str) -> str:
    """The commands `make demo` would run (make -n: printed, not run)."""
    done = subprocess.run(
        ["make", "-n", "demo"],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "FORGE_HOME"}, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("where", ["environment", "command line"])
def test_the_demo_reads_its_outputs_from_forge_home(tmp_path: Path, where: str):
    home = str(tmp_path / "elsewhere")
    if where == "environment":
        commands = demo_commands(FORGE_HOME=home)
    else:
        commands = subprocess.run(
            ["make", "-n", "demo", f"FORGE_HOME={home}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    summarize = next(line for line in commands.splitlines() if "summarize.py" in line)
    # Before: the outputs were looked up under .forge/outputs whatever FORGE_HOME said.
    assert f"{home}/outputs/run-*" in summarize and ".forge/" not in commands
    assert f"{home}/demo/data" in commands


def test_without_forge_home_the_demo_uses_forges_default():
    commands = demo_commands()
    assert ".forge/outputs/run-*" in commands and ".forge/demo/data" in commands
