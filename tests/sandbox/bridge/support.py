"""Shared helpers of the bridge tests: the run/step identity, the step prelude, running a step."""

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from activities.sandbox.bridge import BridgeCall, BridgeLedger, BridgeServer
from activities.sandbox.bridge_tools import builtin_handlers
from activities.sandbox.runner import SandboxResult, run_sandboxed
from activities.sandbox.workspace import ensure_layout
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore
from schemas.bridge import BridgePolicy
from schemas.evaluator import EVALUATION_PROOF
from schemas.events import Event
from schemas.scope import Scope
from schemas.step_events import EvaluationProofRecorded
from tests.support.sandbox import sandbox_limits

LIMITS = sandbox_limits(output_cap_bytes=1 << 20)
RUN = "run-bridge"
STEP = "fetch"
STREAM = f"{RUN}:step:{STEP}"
STARTED = f"{RUN}:step.started.v1:{STEP}:1"
# Prepended to every step: call() returns ["ok", result] or ["err", class, message].
PRELUDE = """
import json, sys
import forge_bridge

def call(tool, args=None, key=None):
    try:
        return ["ok", forge_bridge.call(tool, args, key=key, timeout=60)]
    except forge_bridge.BridgeError as exc:
        return ["err", exc.failure_class, exc.message]

def emit(*values):
    print(json.dumps(values))
"""
PROOF = {
    "proof_id": "proof-1",
    "model_call_id": "model-call-7",
    "model": "scripted:evaluator",
    "bundle_sha256": "sha256:" + "ab" * 32,
    "rubric": ["totals reconcile", "no placeholders"],
    "verdict": "pass",
    "criteria": [
        {
            "criterion": "totals reconcile",
            "result": "pass",
            "rationale": "sums match",
            "evidence_refs": [],
        },
        {
            "criterion": "no placeholders",
            "result": "pass",
            "rationale": "none found",
            "evidence_refs": [],
        },
    ],
    "summary": "both hold",
    "enforcement": "block",
    "passed": True,
    "context_hash": "sha256:" + "cd" * 32,
    "step_key": "fetch",
    "proof_ref": {
        "artifact_id": "sha256:" + "ef" * 32,
        "path": "meta/r/proofs/proof-1.json",
        "sha256": "ef" * 32,
        "size_bytes": 100,
        "media_type": None,
    },
}


def policy(**overrides: Any) -> BridgePolicy:
    base: dict[str, Any] = {
        "run_id": RUN,
        "step_key": STEP,
        "attempt": 1,
        "contract_hash": "sha256:" + "c0" * 32,
        "allowed_tool_ids": ["log.note", "artifact.evaluate", "http.request"],
        "bridge_call_budget": 10,
        "scope": Scope.default(),
    }
    return BridgePolicy(**{**base, **overrides})


class Counting:
    """A tool handler that counts its invocations (and may return something else)."""

    def __init__(self, result: Callable[[dict[str, Any], BridgeCall], Any]) -> None:
        self.calls: list[dict[str, Any]] = []
        self._result = result

    def __call__(self, args: dict[str, Any], call: BridgeCall) -> Any:
        self.calls.append(args)
        return self._result(args, call)


def evaluate_handler(args: dict[str, Any], call: BridgeCall) -> dict[str, Any]:
    """The test's artifact.evaluate: returns a proof and records it as evaluation.proof.v1."""
    call.emit(EVALUATION_PROOF, EvaluationProofRecorded.model_validate(PROOF))
    return {**PROOF, "subject": args.get("path")}


def run_step(
    tmp_path: Path,
    store: EventStore,
    artifacts: LocalArtifactStore,
    code: str,
    *,
    bridge_policy: BridgePolicy | None = None,
    handlers: dict[str, Any] | None = None,
    run_budget_refusal: Callable[[], str | None] = lambda: None,
    isolation: str = "bwrap",
    workspace: Path | None = None,
) -> tuple[SandboxResult, list[Any]]:
    """Serve a bridge for one attempt and run `code` in the sandbox against it."""
    ws = workspace or tmp_path / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ensure_layout(ws)
    (ws / "meta" / "step.py").write_text(PRELUDE + textwrap.dedent(code))
    pol = bridge_policy or policy()
    ledger = BridgeLedger(
        store, artifacts, policy=pol, caused_by=STARTED, run_budget_refusal=run_budget_refusal
    )
    all_handlers = {**builtin_handlers(), "artifact.evaluate": evaluate_handler, **(handlers or {})}
    with BridgeServer(
        ws / "meta" / "bridge.sock", policy=pol, handlers=all_handlers, ledger=ledger
    ):
        result = run_sandboxed(
            ["python", "/workspace/meta/step.py"],
            workspace=ws,
            limits=LIMITS,
            isolation=isolation,  # type: ignore[arg-type]
            bridge=True,
        )
    assert result.exit_code == 0, result.stderr
    assert result.violations == []
    assert not (ws / "meta" / "bridge.sock").exists(), "the bridge removes its socket"
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def events_of(store: EventStore, type_: str | None = None) -> list[Event]:
    return [e for e in store.read_stream(STREAM) if type_ is None or e.type == type_]


def step_result(out: list[Any]) -> list[Any]:
    return [line[0] for line in out]
