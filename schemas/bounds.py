"""How large what Forge is sent may be: plans, objectives, and the integers the API accepts.

Text. A bounded input is what bounds the work done on it: recipe matching, the compile passes
and the ladder each do work linear in what they are given, so these caps (checked when a plan is
parsed, before anything is stored or started, on the CLI's path and the API's alike) are what
keeps an activity far inside its timeout. Each cap is far above any plan seen in the wild (the
largest example's mission is under 200 characters, its largest step code under 200).

Integers. Python's int has no limit; a PostgreSQL Integer holds 32 bits, a BigInteger (and
SQLite) 64, and RFC 8785 JSON, which hashes bodies and plans, holds integers only up to
2**53 - 1 in magnitude. Every path, query and body integer of the API is one of these types, so
a value beyond its column is a 422 naming the field before any handler runs, never a store's
overflow.
"""

from typing import Annotated

from pydantic import AfterValidator, Field

__all__ = [
    "CODE_MAX",
    "INT32_MAX",
    "INT64_MAX",
    "JSON_INT_MAX",
    "LIST_MAX",
    "MISSION_MAX",
    "NAME_MAX",
    "OBJECTIVE_MAX",
    "PATH_MAX",
    "PLAN_MAX_BYTES",
    "PROSE_MAX",
    "STEPS_MAX",
    "Code",
    "Count",
    "JsonFloat",
    "JsonInt",
    "Label",
    "Name",
    "Note",
    "PathText",
    "Position",
    "PositionText",
    "Prose",
    "Version",
]

OBJECTIVE_MAX = 20_000  # an objective to match and plan; a plan's mission and step objectives
MISSION_MAX = OBJECTIVE_MAX
PROSE_MAX = 8_000  # success criteria, an approval's prompt, an evaluation's rubric line
NOTE_MAX = 2_000  # a description of an input or a parameter, a string default
LABEL_MAX = 200
NAME_MAX = 256  # ids, slots, keys, roles
PATH_MAX = 1_024
CODE_MAX = 256 * 1024  # a step's frozen code, in characters
STEPS_MAX = 1_000  # steps in one plan (the compile benchmark's largest plan)
LIST_MAX = 1_000  # entries of any other list or map of a plan
# The whole plan document as JSON: the same figure as the API's default body limit
# (FORGE_API_MAX_BODY_BYTES), so a plan the CLI accepts is one the API accepts.
PLAN_MAX_BYTES = 4 * 1024 * 1024

Label = Annotated[str, Field(max_length=LABEL_MAX)]
Name = Annotated[str, Field(max_length=NAME_MAX)]
PathText = Annotated[str, Field(max_length=PATH_MAX)]
Prose = Annotated[str, Field(max_length=PROSE_MAX)]
Note = Annotated[str, Field(max_length=NOTE_MAX)]
Code = Annotated[str, Field(max_length=CODE_MAX)]


INT32_MAX = 2**31 - 1  # a PostgreSQL Integer column (artifact and capsule versions)
INT64_MAX = 2**63 - 1  # a BigInteger column (a tenant's event positions)
JSON_INT_MAX = 2**53 - 1  # RFC 8785 / I-JSON: what an IEEE 754 double holds exactly

# A capsule's or an artifact's version: 1, 2, ...
Version = Annotated[int, Field(ge=1, le=INT32_MAX)]
# A place in a tenant's event log (`events?after=`): 0 is before the first event.
Position = Annotated[int, Field(ge=0, le=INT64_MAX)]
# A count or amount in a body (tokens, ...): a positive integer JSON carries exactly.
Count = Annotated[int, Field(ge=1, le=JSON_INT_MAX)]
# Any integer a body may carry (a run's parameter values).
JsonInt = Annotated[int, Field(ge=-JSON_INT_MAX, le=JSON_INT_MAX)]
# Any number a body may carry: finite (JSON has no NaN or infinity, though Python's parser reads
# the tokens).
JsonFloat = Annotated[float, Field(allow_inf_nan=False)]


def _within_int64(text: str) -> str:
    if int(text) > INT64_MAX:
        raise ValueError(f"must be at most {INT64_MAX} (a position in the event log)")
    return text


# A Position sent as text (an opaque `cursor` a page handed out).
PositionText = Annotated[str, Field(pattern=r"^[0-9]{1,19}$"), AfterValidator(_within_int64)]
