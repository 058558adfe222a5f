"""The guard's findings: credentials masked on a way out, or found in a step's files.

Masked: before an event, a log line, a failure or a CLI line was written or sent. Found: in the
files a step read or wrote, under an execution profile whose step phase reports.
"""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel

__all__ = [
    "GUARD_FOUND",
    "GUARD_MASKED",
    "GUARD_OUTPUT_MASKED",
    "CredentialsFound",
    "FileFinding",
    "GuardPhase",
    "MaskedFinding",
    "OutputMasked",
    "OutputSink",
    "SecretsMasked",
]

GUARD_MASKED = "guard.masked.v1"
GUARD_OUTPUT_MASKED = "guard.output_masked.v1"
GUARD_FOUND = "guard.found.v1"

# Where a process wrote text that held credentials: a log record, a failure on its way to
# Temporal's history, a line the CLI printed, an error body the HTTP API answered, or a text
# cut to a limit for an event's field or a model's prompt (masked before the cut, noted then).
OutputSink = Literal["log", "failure", "cli", "api", "event", "prompt"]
# The execution profile's validation phases the step harness applies the guard at.
GuardPhase = Literal["step_input", "step_output"]


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


class FileFinding(FrozenModel):
    """One credential in a file a step read or wrote: which file, where in it, what, its mask."""

    file: str = Field(description="the workspace path, e.g. output/result.json")
    where: str = Field(
        description="a JSON pointer into the document ('' = the whole of it), or 'line N' "
        "(a CSV's 'line N, column C')"
    )
    detector: str
    masked: str = Field(description="a safe stand-in (length, first characters), never the value")


class CredentialsFound(FrozenModel):
    """Payload of guard.found.v1: credentials in the files a step read or wrote, reported.

    Stream: the step's (`<run>:step:<step_key>`), caused by the attempt's receipt of the phase.
    Written when the execution profile's phase is `report`: the attempt went on and the files
    are unchanged. In `block` mode the attempt fails instead (POLICY_BLOCKED), its
    step.failed.v1 naming the file, where and the detector.
    """

    step_key: str
    iteration: int = Field(default=1, ge=1, description="the loop pass (set only after the 1st)")
    attempt: int = Field(ge=1)
    phase: GuardPhase
    findings: list[FileFinding]
    more: int = Field(default=0, ge=0, description="further findings, not listed")
