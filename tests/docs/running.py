"""Running a shown `$ forge …` command as a user would, and checking it prints what is shown."""

import re
import shlex

from typer.testing import CliRunner

from tests.docs.shown import Shown, missing_lines, shown_width
from workers.cli import app

_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=.*")


def without_assignments(command: str) -> str:
    """The command after its leading `NAME=value` words (the variables a shell would set)."""
    words = command.split(" ")
    while words and _ASSIGNMENT.fullmatch(words[0]):
        words.pop(0)
    return " ".join(words)


def printed_by(shown: Shown, command: str) -> str:
    """What `command` (the shown one, adapted to this test's paths) prints.

    It runs at the width the output was shown at, so a table squeezed to fit wraps the same; a
    trailing `; echo "exit $?"` adds the exit code, as a shell would; leading `NAME=value`
    words set those variables for the command alone, as a shell would.
    """
    words = shlex.split(command.split(";")[0], comments=True)
    env = {"COLUMNS": str(shown_width(shown.output))}
    while words and _ASSIGNMENT.fullmatch(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    result = CliRunner().invoke(app, words[1:], env=env)
    printed = result.output
    if 'echo "exit $?"' in command:
        printed += f"\nexit {result.exit_code}"
    return printed


def assert_prints_shown(shown: Shown, printed: str, home: str) -> None:
    """Every shown line is in `printed`, in order (FORGE_HOME reads as `$FORGE_HOME`)."""
    missing = missing_lines(shown.output, printed.replace(home, "$FORGE_HOME"))
    assert not missing, (
        f"{shown.source}: `{shown.command}` no longer prints these shown lines:\n"
        + "\n".join(missing)
        + "\n--- it prints:\n"
        + printed
    )
