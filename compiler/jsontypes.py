"""The JSON Schema type of a Python value: one definition for the ladder and the imprinting library.

JSON Schema (2020-12, and every draft since 06) makes no distinction between 1 and 1.0: "integer"
is any number with a zero fractional part. So a whole float is an "integer" here, as jsonschema's
own type checker has it; whether a value was *written* with a fraction is a question about its
Python representation (`isinstance(value, float)`), which callers that convert ask themselves.
"""

from typing import Any

__all__ = ["json_type"]


def json_type(value: Any) -> str:
    """The most specific JSON Schema type of `value` ("integer" for 1 and 1.0, "number" for 1.5).

    One of null, boolean, integer, number, string, array (a list), object (a dict); a value
    that is not JSON (a tuple, a set, bytes) is named by its Python type, never passed off as one.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is a subclass of int, never a number in JSON
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"  # nan and ±inf are not whole
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
