"""A run's scalar parameters: `NAME=VALUE` pairs parsed, values coerced to their declared type.

Pure: the submitter (`forge run --param`), the step harness (meta/params.json) and the capsule
CLI check values with the same functions, so a value refused in one place is refused in all.
"""

import math
import re
from collections.abc import Mapping, Sequence

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import PARAM_NAME_PATTERN, ParameterDecl, Scalar
from schemas.spelling import Named, Spelled

__all__ = [
    "ParameterInvalid",
    "bind_params",
    "coerce",
    "declaration_problems",
    "parse_assignments",
    "typed_declarations",
]

_NAME = re.compile(PARAM_NAME_PATTERN)
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})
_HINT = Spelled("give it as {0}, a value of the declared type", (Named("param", "NAME"),))


class ParameterInvalid(ForgeError, ValueError):
    """A parameter value that is malformed, unknown, missing or not of its declared type.

    Its message and hint name parameters as `--param NAME=VALUE` on the CLI and `params.NAME`
    in the API (`Spelled`).
    """

    code = ErrorCode.PARAMETER_INVALID

    def __init__(
        self, message: str | Spelled, *, name: str | None = None, hint: str | Spelled = _HINT
    ) -> None:
        super().__init__(message if isinstance(message, str) else "")
        if isinstance(hint, str):
            hint = Spelled(_braced(hint))
        self.spell(message if isinstance(message, Spelled) else Spelled(_braced(message)), hint)
        self.name = name


def parse_assignments(pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=VALUE` pairs as a mapping; the value is everything after the first `=`.

    Raises:
        ParameterInvalid: a pair without `=`, a name that is not a parameter name, or a name
            given twice.
    """
    given: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not _NAME.fullmatch(name):
            raise ParameterInvalid(
                f"--param {pair!r}: expected NAME=VALUE with NAME letters, digits or '_' "
                "(not starting with a digit), e.g. --param cutoff=2026-01-31"
            )
        if name in given:
            raise ParameterInvalid(
                Spelled("{0} is given twice; give it once", (Named("param", name, ""),)),
                name=name,
            )
        given[name] = value
    return given


def _bad(decl: ParameterDecl, raw: object) -> ParameterInvalid:
    return ParameterInvalid(
        f"parameter {decl.name!r} must be {_article(decl.type)} {decl.type}, not {raw!r}",
        name=decl.name,
    )


def _article(type_: str) -> str:
    return "an" if type_ == "integer" else "a"


def coerce(decl: ParameterDecl, raw: str | Scalar) -> Scalar:
    """`raw` as a value of the parameter's declared type.

    Strings are parsed (`integer`: decimal digits; `number`: a finite decimal; `boolean`:
    true/false, 1/0, yes/no in any case); typed values must already be of the type (an integer
    is also a number; a bool is no number).

    Raises:
        ParameterInvalid: the value is not of the type; the message names the parameter, the
            type and the value given.
    """
    kind = decl.type
    if kind == "string":
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise _bad(decl, raw)
        return raw if isinstance(raw, str) else str(raw)
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
            return raw.strip().lower() in _TRUE
        raise _bad(decl, raw)
    if isinstance(raw, bool):  # bool is an int to Python, never a number to a person
        raise _bad(decl, raw)
    if kind == "integer":
        if isinstance(raw, int):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        if isinstance(raw, str) and re.fullmatch(r"\s*[+-]?\d{1,30}\s*", raw):
            return int(raw)
        raise _bad(decl, raw)
    # number
    if isinstance(raw, int):
        return raw
    value: float
    if isinstance(raw, float):
        value = raw
    else:
        try:
            value = float(raw.strip())
        except ValueError:
            raise _bad(decl, raw) from None
    if not math.isfinite(value):
        raise _bad(decl, raw)
    return value


def bind_params(
    decls: Sequence[ParameterDecl], given: Mapping[str, str | Scalar]
) -> dict[str, Scalar]:
    """Every declared parameter's value: the given one coerced, else its default.

    Raises:
        ParameterInvalid: a given name the plan does not declare (the message lists the
            declared ones), a value not of its type, or a parameter with no default that was
            not given.
    """
    declared = {d.name: d for d in decls}
    if len(declared) < len(decls):
        problems = declaration_problems(decls)
        raise ParameterInvalid(f"the plan's parameters: {'; '.join(problems)}")
    unknown = sorted(set(given) - set(declared))
    if unknown:
        fields = tuple(Named("param", n, "") for n in unknown)
        raise ParameterInvalid(
            Spelled(
                ", ".join(f"{{{i}}}" for i in range(len(fields)))
                + ": not a parameter of this plan; declared: "
                + _braced(", ".join(sorted(declared)) or "none"),
                fields,
            ),
            name=unknown[0],
        )
    bound: dict[str, Scalar] = {}
    for name, decl in sorted(declared.items()):
        if name in given:
            bound[name] = coerce(decl, given[name])
        elif decl.default is not None:
            bound[name] = coerce(decl, decl.default)
        else:
            raise ParameterInvalid(
                Spelled(
                    _braced(f"parameter {name!r} ({decl.type}) has no default and was not given")
                    + ": {0}",
                    (Named("param", name),),
                ),
                name=name,
            )
    return bound


def _braced(text: str) -> str:
    """`text` as a literal part of a Spelled template."""
    return text.replace("{", "{{").replace("}", "}}")


def declaration_problems(decls: Sequence[ParameterDecl], given: Sequence[str] = ()) -> list[str]:
    """What is wrong with a plan's parameter declarations (each problem names the parameter).

    A name declared twice, a default not of its type, and a name in `given` (the values the
    user started the run with) that is not declared.
    """
    problems: list[str] = []
    seen: set[str] = set()
    for decl in decls:
        if decl.name in seen:
            problems.append(f"parameters: {decl.name!r} is declared twice; declare it once")
        seen.add(decl.name)
        if decl.default is not None:
            try:
                coerce(decl, decl.default)
            except ParameterInvalid as exc:
                problems.append(f"parameters: the default of {exc.message}")
    problems += [
        f"parameters: the user gave --param {name}=...; declare {name!r} (with its type) and "
        "read it in the steps' code"
        for name in sorted(set(given) - seen)
    ]
    return problems


def typed_declarations(decls: Sequence[ParameterDecl]) -> list[ParameterDecl]:
    """The declarations with each default as a value of its type ("10" for an integer: 10).

    Raises:
        ParameterInvalid: a default that is not of its type.
    """
    return [
        d if d.default is None else d.model_copy(update={"default": coerce(d, d.default)})
        for d in decls
    ]
