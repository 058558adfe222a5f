"""The attempt's workspace in and out: a fresh layout, its inputs copied in, its outputs stored.

Harness steps 1-3 (prepare the workspace, materialize the inputs at the exact read paths the
contract names) and 9 (persist the declared outputs as artifacts), with the files the platform
and the step's code leave each other beside them: the loop's pass in, the done-note out.
"""

import shutil
from collections.abc import Mapping
from pathlib import Path

from activities.harness.failure import StepFailure
from activities.masked_output import clipped
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from activities.store.artifacts import ArtifactCorrupt, ArtifactStore
from activities.store.errors import ArtifactNotFound
from schemas.artifacts import ArtifactRef
from schemas.compiled import CompiledStep
from schemas.error_codes import ErrorCode
from schemas.scope import Scope

WORKSPACE_DIRS = ("input", "work", "output", "meta")
ITERATION_FILE = "meta/iteration"
NOTE_FILE = "work/note.md"  # the step's done-note: what a loop's until-dry / until MARKER reads
NOTE_MAX = 4096


# 1. Prepare workspace
def prepare_workspace(root: Path) -> Path:
    """A fresh /workspace/{input,work,output,meta} for one attempt (nothing reused)."""
    if root.exists():
        shutil.rmtree(root)
    for sub in WORKSPACE_DIRS:
        (root / sub).mkdir(parents=True)
    return root


def write_iteration(workspace: Path, iteration: int) -> None:
    """Which pass of a loop this is, for step code that adapts (1 for a step without a loop)."""
    (workspace / ITERATION_FILE).write_text(f"{iteration}\n", encoding="utf-8")


# 2. Materialize inputs (and 3. project them at the exact read paths the contract names)
def materialize_inputs(
    workspace: Path,
    step: CompiledStep,
    inputs: Mapping[str, ArtifactRef],
    store: ArtifactStore,
    *,
    scope: Scope,
) -> None:
    """Copy each verified upstream artifact of the scope's tenant to its read path.

    A missing required input fails the step.
    """
    required = {b.path for b in step.bindings if b.required} | set(step.input_file_paths)
    for path in step.executable_contract_v2.read_paths:
        ref = inputs.get(path)
        if ref is None:
            if path in required:
                raise StepFailure(
                    ErrorCode.MISSING_INPUT, f"required input {path} was not provided"
                )
            continue
        dest = workspace / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            # The workspace lives as long as the attempt: no flush to disk for its copy.
            store.get_to_file(scope, ref.sha256, dest, durable=False)
        except ArtifactCorrupt as exc:
            raise StepFailure(
                ErrorCode.MISSING_INPUT, f"input {path} failed its hash check: {exc}"
            ) from exc
        except ArtifactNotFound as exc:  # never stored for this run's tenant: no retry finds it
            raise StepFailure(
                ErrorCode.MISSING_INPUT, f"input {path} is not in the store: {exc}"
            ) from exc


# 9. Persist outputs
def persist_outputs(
    workspace: Path, step: CompiledStep, store: ArtifactStore, *, scope: Scope
) -> list[ArtifactRef]:
    """Store each declared output as an artifact of the scope's tenant."""
    refs = []
    for path in step.executable_contract_v2.write_paths:
        contract = step.resolved_artifact_contracts.get(path)
        refs.append(
            store.put_file(
                scope,
                workspace / path,
                logical_path=path,
                media_type=contract.media_type if contract else None,
            )
        )
    return refs


def read_note(workspace: Path) -> str | None:
    """The done-note the step left, read without following links; capped, never fatal."""
    try:
        data = safe_read(workspace, NOTE_FILE, 1 << 20)
    except FileNotFoundError:
        return None
    except WorkspaceViolation as err:
        return f"(note refused: {err})"
    return clipped(data.decode("utf-8", errors="replace").strip(), NOTE_MAX, "event")
