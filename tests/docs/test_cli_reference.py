"""Every verb of the `forge` CLI is shown with a `$ forge VERB …` line in docs/cli*.md."""

import typer

from tests.docs.shown import ROOT, shown_commands
from workers.cli import app


def _verbs(group: typer.Typer, prefix: str = "") -> list[str]:
    """The full name of every command the app registers ("compile", "recipes match", …)."""
    verbs = []
    for command in group.registered_commands:
        assert command.callback is not None
        name = command.name or command.callback.__name__.replace("_", "-")
        verbs.append(f"{prefix}{name}")
    for sub in group.registered_groups:
        assert sub.typer_instance is not None
        name = sub.name or sub.typer_instance.info.name
        verbs.extend(_verbs(sub.typer_instance, f"{prefix}{name} "))
    return verbs


VERBS = _verbs(app)
PAGES = (
    "cli.md",
    "cli-operations.md",
    "cli-library.md",
    "cli-capsules.md",
    "cli-schedules.md",
    "cli-access.md",
)
SHOWN = [s.command for page in PAGES for s in shown_commands(ROOT / "docs" / page)]


def test_the_app_is_walked():
    assert {"compile", "recipes match", "skills deprecate", "db upgrade"} <= set(VERBS)


def test_every_verb_has_an_example_in_docs_cli():
    missing = [
        verb for verb in VERBS if not any(f"{cmd} ".startswith(f"forge {verb} ") for cmd in SHOWN)
    ]
    assert not missing, f"docs/cli*.md show no `$ forge VERB …` line for: {missing}"
