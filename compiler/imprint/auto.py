"""AUTO values come from an injected provider, so the conversion itself stays pure.

The compiler never reads a clock or draws a uuid: the caller passes an `AutoValues` (an
activity can wrap `uuid4` and the workflow clock; tests pass fixed or seeded generators).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from compiler.imprint.tokens import Token


@runtime_checkable
class AutoValues(Protocol):
    """Supplies the value of an `{AUTO|...}` token the model left for the system."""

    def value_for(self, token: Token, path: str) -> Any:
        """Return the value for `token` at JSON path `path`.

        Raises:
            LookupError: the provider has no generator for this token (reported as a
                TemplateError naming the path).
        """
        ...


@dataclass(frozen=True)
class AutoByFormat:
    """An `AutoValues` keyed by the token's `format:` (falling back to its type).

    Example:
        `AutoByFormat({"uuid": lambda: str(uuid4()), "date-time": now_iso})`, built where
        impure code is allowed (an activity, a test), then passed to `template_to_payload`.
    """

    generators: Mapping[str, Callable[[], Any]] = field(default_factory=dict)

    def value_for(self, token: Token, path: str) -> Any:
        """Call the generator registered for the token's format, else for its type."""
        for key in (token.modifier("format"), token.type):
            if key is not None and key in self.generators:
                return self.generators[key]()
        raise LookupError(f"no generator for format {token.modifier('format')!r} or {token.type}")
