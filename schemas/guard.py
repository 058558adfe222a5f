"""The guard's boundary findings: credentials masked before something was written or sent."""

from pydantic import Field

from schemas.base import FrozenModel

__all__ = ["GUARD_MASKED", "MaskedFinding", "SecretsMasked"]

GUARD_MASKED = "guard.masked.v1"


class MaskedFinding(FrozenModel):
    """One credential that was masked: where in the payload, by which detector, its mask."""

    path: str = Field(description="JSON pointer into the masked event's payload ('' = whole)")
    detector: str
    masked: str = Field(description="a safe stand-in (length, last characters), never the value")


class SecretsMasked(FrozenModel):
    """Payload of guard.masked.v1, caused by the event whose payload held credentials.

    Stream `guard:<tenant>`. The masked event holds `[REDACTED:<detector>]` where each was.
    """

    event_id: str
    event_type: str
    stream_id: str
    findings: list[MaskedFinding]
