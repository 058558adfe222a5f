"""The run's scalar parameters in the step's workspace, and which of them the step read.

Before the executor: meta/params.json holds every declared parameter's value (the run's, else
the default), typed, for `forge_bridge.param`. After it: meta/params-read, which the step
runtime appends a name to on each read, says which parameters the step's code read. That
file is in the sandbox-writable workspace: it is read without following links, capped, and
whatever it holds is trusted only as far as it names declared parameters.
"""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from activities.harness.failure import StepFailure
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from compiler.plan.params import ParameterInvalid, bind_params
from schemas.error_codes import ErrorCode
from schemas.plan import ParameterDecl, Scalar

PARAMS_FILE = "meta/params.json"
PARAMS_READ_FILE = "meta/params-read"
PARAMS_READ_MAX = 64 * 1024


def step_params(
    step_key: str, decls: Sequence[ParameterDecl], given: Mapping[str, Scalar]
) -> dict[str, Scalar]:
    """The declared parameters' values for the step; a value not of its type fails the step.

    Names the plan does not declare are left out: a plan run's were refused at submission, and
    an objective run's planner was asked to declare them (what it did not declare no step reads).
    """
    declared = {d.name for d in decls}
    try:
        return bind_params(decls, {k: v for k, v in given.items() if k in declared})
    except ParameterInvalid as exc:
        raise StepFailure(ErrorCode.PARAMETER_INVALID, f"step {step_key}: {exc}") from None


def write_params(workspace: Path, values: Mapping[str, Scalar]) -> None:
    """meta/params.json, in a fresh workspace (before any step code ran in it)."""
    text = json.dumps(dict(sorted(values.items())), ensure_ascii=False, allow_nan=False)
    (workspace / PARAMS_FILE).write_text(text + "\n", encoding="utf-8")


def params_read(workspace: Path, declared: Sequence[str]) -> list[str]:
    """The declared parameters the step's code read, sorted; [] when the record is unusable.

    A link, a special file, an oversized or undecodable record means no reads were recorded:
    it is the step's own file, and the step may have written anything there.
    """
    if not declared:
        return []
    try:
        data = safe_read(workspace, PARAMS_READ_FILE, PARAMS_READ_MAX)
    except (OSError, WorkspaceViolation):  # missing, a link on the way, not a regular file
        return []
    names = {line.strip() for line in data.decode("utf-8", errors="replace").splitlines()}
    return sorted(names & set(declared))
