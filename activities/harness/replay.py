"""A sealed capsule step: the programs the source run's executor wrote, run again in order.

No model is asked for code. Each program runs in the same workspace, one after the other, as
the Code-Act loop ran them, each recorded as the loop records a turn (tool.called.v1, marked
`replayed`); after the last one the platform verifies the outputs exactly as it would have. A
program whose bytes no longer hash to the capsule's sha256 is refused before it runs.
"""

from collections.abc import Callable

from activities.harness.attempt import StepAttempt, StepServices
from activities.harness.codeact import TurnReport
from activities.harness.codeact_session import HarnessSession
from activities.harness.failure import StepFailure
from activities.store.capsules import MAX_BLOB_BYTES
from activities.store.errors import ArtifactCorrupt, ArtifactNotFound, ArtifactTooLarge
from schemas.artifacts import ArtifactRef
from schemas.error_codes import ErrorCode

Record = Callable[[int, str, TurnReport], None]


def replay_programs(
    attempt: StepAttempt, services: StepServices, session: HarnessSession, record: Record
) -> str:
    """Run the step's sealed programs in order in `session`; returns the last one.

    Raises:
        StepFailure: a program is missing or altered (CAPSULE_TAMPERED), or the outputs did
            not verify after the last program (the code does not fit this data).
    """
    step = attempt.step
    code, report = "", None
    for turn, ref in enumerate(attempt.inp.replay, start=1):
        code = _program(attempt, services, ref, turn)
        report = session.run_code(code, turn)
        record(turn, code, report)
    if report is None or not report.verified:
        problems = "; ".join(report.problems[:5]) if report else "no program to run"
        raise StepFailure(
            (report.failure_class if report else None) or ErrorCode.CODE_ERROR,
            f"step {step.step_key}: the capsule's sealed code ran ({len(attempt.inp.replay)} "
            f"program(s)) and its outputs did not verify: {problems}; the code does not fit "
            f"this data: run the capsule with --fresh {step.step_key} to write new code",
        )
    return code


def _program(attempt: StepAttempt, services: StepServices, ref: ArtifactRef, turn: int) -> str:
    why = None
    try:
        data = services.artifacts.read_bytes(attempt.inp.scope, ref.sha256, MAX_BLOB_BYTES)
        return data.decode("utf-8")
    except (ArtifactNotFound, ArtifactCorrupt, ArtifactTooLarge) as exc:
        why = str(exc)
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text (byte {exc.start})"
    raise StepFailure(
        ErrorCode.CAPSULE_TAMPERED,
        f"step {attempt.step.step_key}: sealed program {turn} ({ref.sha256}) cannot be read: "
        f"{why}; extract or import the capsule again",
    )
