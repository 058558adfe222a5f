"""A request field as each surface spells it: `--input hours=PATH` (CLI), `inputs.hours` (API).

Code both surfaces share (binding a plan's inputs and parameters) raises errors that name what
was wrong. Such an error carries its text as a template and the fields it names (`Spelled`);
its message is the CLI's wording, and the API renders the same template with its own field
names, so an API answer never tells a caller to pass a flag it has no way to pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Named", "Spelled", "Surface", "literal"]

Surface = Literal["cli", "api"]
_CLI_VALUE = {"input": "PATH", "param": "VALUE", "gate_role": ""}


@dataclass(frozen=True)
class Named:
    """One field a request gave (or should have): a run input or a parameter, by name."""

    kind: Literal["input", "param", "gate_role", "option", "action"]
    name: str
    value: str | None = None  # what the CLI shows after NAME= (None: its placeholder)
    # An "action" is a command, not a field: `name` is the CLI's command line and `value` how
    # an API caller does the same (an endpoint, or who to ask).

    @property
    def field(self) -> str:
        """Where it is in an API request body: `body.inputs.hours`, `body.cron`."""
        if self.kind == "option":
            return f"body.{self.name}"
        return f"body.{self.kind}s.{self.name}"

    def spelled(self, surface: Surface) -> str:
        """`--input hours=PATH` for the CLI, `inputs.hours` for the API.

        An option (a request's own field: `cron`, `catchup_window`) is `--cron EXPR` or
        `--catchup-window` on the CLI (its value, if given, as a placeholder) and `cron` in
        the API.
        """
        if self.kind == "action":  # a way to do something: the CLI's command, the API's words
            return f"`{self.name}`" if surface == "cli" else (self.value or "")
        if self.kind == "option":
            if surface == "api":
                return self.name
            flag = "--" + self.name.replace("_", "-")
            return f"{flag} {self.value}" if self.value else flag
        if surface == "api" and self.kind == "gate_role":
            return f'gate_roles ["{self.name}"] (POST /v1/keys)'
        if surface == "api":
            return f"{self.kind}s.{self.name}"
        flag = "--" + self.kind.replace("_", "-")
        value = self.value if self.value is not None else _CLI_VALUE[self.kind]
        return f"{flag} {self.name}={value}" if value else f"{flag} {self.name}"


def literal(text: str) -> str:
    """`text` as it reads inside a Spelled template: its braces are text, not fields."""
    return text.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class Spelled:
    """A text whose `{0}`, `{1}`, … are fields, each spelled as the surface reading it does."""

    text: str
    names: tuple[Named, ...] = ()

    def render(self, surface: Surface) -> str:
        """The text for `surface`."""
        return self.text.format(*(n.spelled(surface) for n in self.names))
