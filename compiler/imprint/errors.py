"""The one error imprinting raises: what went wrong, at which JSON path, and what to do."""

import json
import re

from schemas.diagnostic_codes import TemplateReason
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TemplateError(ForgeError, ValueError):
    """A schema, template, filled template or payload that cannot be used as it is.

    Its code is TEMPLATE_INVALID; `reason` says which rule was broken.

    Attributes:
        reason: a stable machine-readable reason (`unfilled`, `type`, `enum`, `range`, `ref`,
            ...; schemas.diagnostic_codes.TEMPLATE_REASONS says what each means).
        path: where: a JSON path into the template/payload (`$.customer.tags[0]`) or a JSON
            pointer into the schema/document (`#/components/schemas/Pet`).
        problem: what was wrong, in one sentence.
        hint: what to do about it.
    """

    code = ErrorCode.TEMPLATE_INVALID
    message_is_complete = True  # `path: problem (fix: hint)`

    def __init__(self, reason: TemplateReason, path: str, problem: str, hint: str) -> None:
        super().__init__(f"{path}: {problem} (fix: {hint})", where=path, hint=hint)
        self.reason: TemplateReason = reason
        self.path = path
        self.problem = problem


def child_path(path: str, key: str | int) -> str:
    """Extend a JSON path (`$`, `$.a`, `$.a[0]`) by an object key or an array index."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def pointer_child(pointer: str, key: str | int) -> str:
    """Extend a JSON pointer (`#/components/schemas`) by one escaped reference token."""
    token = str(key).replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{token}"


def unsatisfiable(where: str, why: str) -> TemplateError:
    """The error for a schema no value can satisfy (`false`, or something that requires it).

    Callers that can do without the value (an optional property, one alternative of several,
    the items of an array that may stay empty) catch reason `unsatisfiable` and leave it out.
    """
    return TemplateError(
        "unsatisfiable", where, f"no value can satisfy this schema: {why}", "fix the schema"
    )
