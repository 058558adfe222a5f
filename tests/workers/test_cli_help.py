"""`forge --help` and every group's help: click's plain format, each verb's sentence whole."""

import re

import pytest
import typer.main
from typer.core import TyperGroup as Group
from typer.testing import CliRunner

from workers.cli import app
from workers.cli.common import VerbGroup

runner = CliRunner()


def _groups() -> list[tuple[str, Group]]:
    found: list[tuple[str, Group]] = []

    def walk(path: str, command: object) -> None:
        if isinstance(command, Group):
            found.append((path, command))
            for name, sub in command.commands.items():
                walk(f"{path} {name}", sub)

    walk("forge", typer.main.get_command(app))
    return found


def test_every_group_is_a_verb_group() -> None:
    """A group added with typer's default class would cut its verbs' lines again."""
    groups = _groups()
    assert len(groups) > 10  # the root and its sub-apps (capsule, schedule, keys, …)
    plain = [path for path, group in groups if not isinstance(group, VerbGroup)]
    assert plain == [], "give these typer.Typer(cls=VerbGroup, …)"


@pytest.mark.parametrize("path", [path for path, _ in _groups()])
def test_a_groups_help_shows_each_verbs_first_sentence_whole(path: str) -> None:
    args = [*path.split()[1:], "--help"]
    done = runner.invoke(app, args, terminal_width=80, env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    assert "Commands:" in done.output
    commands = done.output.split("Commands:", 1)[1]
    assert "..." not in commands  # click's cut at the terminal's width
    listing = "".join(commands.split())  # wrapping may break a line at a hyphen, too
    group = dict(_groups())[path]
    for name, verb in group.commands.items():
        if verb.hidden or not verb.help:
            continue
        first = " ".join(verb.help.split("\n\n", 1)[0].split())
        sentence = re.split(r"(?<=\.)\s", first, maxsplit=1)[0]
        assert "".join(sentence.split()) in listing, f"{path} {name}: {sentence!r}"
