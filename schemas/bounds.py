"""Integers the API accepts: each bounded by what its store column or JSON itself can hold.

Python's int has no limit; a PostgreSQL Integer holds 32 bits, a BigInteger (and SQLite) 64,
and RFC 8785 JSON, which hashes bodies and plans, holds integers only up to 2**53 - 1 in
magnitude. Every path, query and body integer of the API is one of these types, so a value
beyond its column is a 422 naming the field before any handler runs, never a store's overflow.
"""

from typing import Annotated

from pydantic import AfterValidator, Field

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "JSON_INT_MAX",
    "Count",
    "JsonFloat",
    "JsonInt",
    "Position",
    "PositionText",
    "Version",
]

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
