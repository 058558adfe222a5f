"""`raises_code`: pytest.raises for a ForgeError of one catalogue code.

Most errors are a ForgeError with a code, not a class of their own (schemas/errors.py), so a
test names the code it expects, as callers catch it.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError


@contextmanager
def raises_code(
    code: ErrorCode, *, match: str | None = None
) -> Iterator[pytest.ExceptionInfo[ForgeError]]:
    """Expect a ForgeError whose code is `code` (and whose message matches `match`, a regex)."""
    with pytest.raises(ForgeError, match=match) as caught:
        yield caught
    assert caught.value.code is code, (
        f"expected {code.name}, got {caught.value.code.name}: {caught.value}"
    )
