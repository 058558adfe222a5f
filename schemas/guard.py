"""The guard's boundary findings: credentials masked before something was written or sent."""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel

__all__ = [
    "GUARD_MASKED",
    "GUARD_OUTPUT_MASKED",
    "MaskedFinding",
    "OutputMasked",
    "OutputSink",
    "SecretsMasked",
]

GUARD_MASKED = "guard.masked.v1"
GUARD_OUTPUT_MASKED = "guard.output_masked.v1"

# Where a process wrote text that held credentials: a log record, a failure on its way to
# Temporal's history, a line the CLI printed, an error body the HTTP API answered, or a text
# cut to a limit for an event's field or a model's prompt (masked before the cut, noted then).
OutputSink = Literal["log", "failure", "cli", "api", "event", "prompt"]


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


class OutputMasked(FrozenModel):
    """Payload of guard.output_masked.v1: credentials masked in text a process wrote.

    A root event in stream `guard:<tenant>`: the tenant of the run it happened in, or the one
    the process acted for. The text itself was written with `[REDACTED:<detector>]` in place.
    """

    sink: OutputSink
    source: str = Field(description="the logger, the failing activity or workflow, the command")
    workflow_id: str | None = Field(
        default=None, description="the Temporal workflow it happened in, if any"
    )
    findings: list[MaskedFinding]
    dropped: int = Field(
        default=0,
        ge=0,
        description="maskings before this one the process could not keep (its queue was full)",
    )
