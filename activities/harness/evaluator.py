"""The governed evaluator (seed 000 §6.3): a separate model judges an evidence bundle.

The evaluator is reached three ways: from step code through the tool bridge
(`artifact.evaluate`), as a step of kind `evaluate` (a declared bundle, no code), and as the
fresh-context doubt-driven review that ends an ultra-effort plan. Each way builds the same
EvidenceBundle, compiles the evaluator's context through the context pack compiler, calls the
model bound to the `evaluator` backend (which may differ from the producer's), validates the
verdict against VERDICT_SCHEMA, and persists a proof: the model call id, the bundle's sha256,
the verdict and every criterion's result.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from activities.masked_output import clipped
from activities.models.gateway import ModelGateway
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from compiler.context import compile_context
from compiler.hashing import sha256_of
from schemas.context import ContextPack, EvidenceRef, InvokeRequest, RunContext
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.evaluator import (
    EVALUATION_PROOF,
    VERDICT_SCHEMA,
    Enforcement,
    EvaluationProof,
    EvidenceBundle,
    EvidenceItem,
    Verdict,
)
from schemas.event_catalogue import payload_of
from schemas.event_ids import event_id
from schemas.events import EventDraft
from schemas.models import CallScope, Message, ModelRequest, TextBlock
from schemas.profile import ConsumerBinding
from schemas.step_events import EvaluationProofRecorded

EVIDENCE_TEXT_MAX = 256 * 1024  # bytes of one file the evaluator reads; the rest is marked cut
MAX_BUNDLE_FILES = 64
FIX_ATTEMPTS = 1  # one more turn to repair a verdict that does not match the schema
_VALIDATOR = Draft202012Validator(VERDICT_SCHEMA)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*)\n```$", re.S)


class EvaluationError(ForgeError):
    """The evaluation could not produce a valid verdict (or its bundle is unusable)."""

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code


def bundle_from_workspace(
    workspace: Path,
    *,
    derived: Sequence[str],
    source: Sequence[str] = (),
    rubric: Sequence[str],
    subject: str = "",
) -> EvidenceBundle:
    """Read the bundle's files from a step workspace, never following links the step planted."""
    if not derived:
        raise EvaluationError(ErrorCode.EVALUATION_INVALID, "the bundle names no derived evidence")
    if not [r for r in rubric if r.strip()]:
        raise EvaluationError(ErrorCode.EVALUATION_INVALID, "the bundle has no rubric criteria")
    if len(derived) + len(source) > MAX_BUNDLE_FILES:
        raise EvaluationError(
            ErrorCode.EVALUATION_INVALID, f"a bundle holds at most {MAX_BUNDLE_FILES} files"
        )
    return EvidenceBundle(
        source=[_item(workspace, p) for p in source],
        derived=[_item(workspace, p) for p in derived],
        rubric=[r.strip() for r in rubric if r.strip()],
        subject=subject,
    )


def _item(workspace: Path, path: str) -> EvidenceItem:
    rel = path.removeprefix("/workspace/").lstrip("/")
    try:
        data = safe_read(workspace, rel, 64 * 1024 * 1024)
    except FileNotFoundError:
        raise EvaluationError(
            ErrorCode.EVALUATION_INVALID, f"bundle file {path} does not exist in the workspace"
        ) from None
    except (WorkspaceViolation, ValueError) as exc:
        raise EvaluationError(ErrorCode.EVALUATION_INVALID, f"bundle file {path}: {exc}") from None
    # Decoded with room to spare, then masked before the cut (a large file is read in full).
    head = data[: 2 * EVIDENCE_TEXT_MAX].decode("utf-8", errors="replace")
    text = clipped(head, EVIDENCE_TEXT_MAX, "prompt")
    return EvidenceItem(
        path=rel,
        sha256="sha256:" + _sha(data),
        size_bytes=len(data),
        text=text,
        truncated=len(data) > EVIDENCE_TEXT_MAX,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bundle_sha256(bundle: EvidenceBundle) -> str:
    return sha256_of(bundle.model_dump(mode="json"))


@dataclass(frozen=True)
class EvaluationRequest:
    """One evaluation: the bundle, how it binds, where it is accounted."""

    bundle: EvidenceBundle
    enforcement: Enforcement
    binding: ConsumerBinding
    scope: CallScope
    run_context: RunContext
    proof_key: str
    review_of: str | None = None


class Evaluator:
    """Judges bundles with the evaluator binding's model and persists every proof."""

    def __init__(
        self,
        gateway: ModelGateway,
        pack: ContextPack,
        events: EventStore,
        artifacts: ArtifactStore,
    ) -> None:
        self._gateway = gateway
        self._pack = pack
        self._events = events
        self._artifacts = artifacts

    def evaluate(self, req: EvaluationRequest) -> EvaluationProof:
        """A validated verdict and its persisted proof, or EvaluationError."""
        bundle_hash = bundle_sha256(req.bundle)
        context = compile_context(
            self._pack,
            req.run_context,
            _invoke(req.bundle),
            evidence=lambda _query: _evidence_refs(req.bundle, req.run_context.snapshot_id),
        )
        messages = [Message(role="user", content=[TextBlock(text=context.task_prompt)])]
        overrides = req.binding.runtime_overrides
        problems: list[str] = []
        for turn in range(FIX_ATTEMPTS + 1):
            request = ModelRequest(
                model=req.binding.model_binding_ref,
                consumer="evaluator",
                system=context.system_prompt,
                messages=messages,
                max_tokens=overrides.max_tokens or 4096,
                temperature=overrides.temperature,
                thinking_budget_tokens=overrides.thinking_budget_tokens
                if overrides.use_extended_thinking
                else None,
                timeout_s=overrides.timeout_ms / 1000 if overrides.timeout_ms else None,
            )
            scope = req.scope.model_copy(update={"call_key": f"{req.scope.call_key}:{turn}"[-120:]})
            result = self._gateway.call(request, scope, context=context)
            verdict, problems = parse_verdict(result.response.text, req.bundle.rubric)
            if verdict is not None:
                return self._persist(
                    req, verdict, result.model_call_id, result, bundle_hash, context.context_hash
                )
            messages = [
                *messages,
                Message(
                    role="assistant", content=[TextBlock(text=result.response.text or "(empty)")]
                ),
                Message(
                    role="user",
                    content=[
                        TextBlock(
                            text="Your verdict does not match the required JSON schema: "
                            + "; ".join(problems[:10])
                            + ". Answer again with the JSON verdict object only."
                        )
                    ],
                ),
            ]
        raise EvaluationError(
            ErrorCode.EVALUATION_INVALID,
            "the evaluator's verdict does not match its schema after "
            f"{FIX_ATTEMPTS + 1} answers: " + "; ".join(problems[:5]),
        )

    def _persist(
        self,
        req: EvaluationRequest,
        verdict: Verdict,
        model_call_id: str,
        result: Any,
        bundle_hash: str,
        context_hash: str,
    ) -> EvaluationProof:
        proof = EvaluationProof(
            proof_id=req.proof_key,
            model_call_id=model_call_id,
            model=req.binding.model_binding_ref,  # one name for a model, as model.called has it
            bundle_sha256=bundle_hash,
            rubric=list(req.bundle.rubric),
            verdict=verdict.verdict,
            criteria=verdict.criteria,
            summary=verdict.summary,
            enforcement=req.enforcement,
            passed=verdict.verdict == "pass" or req.enforcement == "report",
            context_hash=context_hash,
            review_of=req.review_of,
        )
        ref = self._artifacts.put_bytes(
            req.scope.scope,
            proof.model_dump_json(indent=2).encode("utf-8"),
            logical_path=f"meta/{req.scope.run_id or 'runless'}/proofs/{_safe(req.proof_key)}.json",
            media_type="application/json",
        )
        scope = req.scope
        self._events.append(
            [
                EventDraft(
                    event_id=event_id(req.proof_key, EVALUATION_PROOF),
                    type=EVALUATION_PROOF,
                    scope=scope.scope,
                    run_id=scope.run_id,
                    caused_by=model_call_id,
                    timestamp=datetime.now(UTC),
                    payload=payload_of(
                        EVALUATION_PROOF,
                        EvaluationProofRecorded(
                            **dict(proof),  # every field of the proof, as ever
                            step_key=scope.step_key,
                            attempt=scope.attempt,
                            iteration=scope.iteration,
                            proof_ref=ref,
                        ),
                    ),
                )
            ],
            stream_id=scope.stream_id,
        )
        return proof


def _safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", key)[:150]


def _invoke(bundle: EvidenceBundle) -> InvokeRequest:
    rubric = "\n".join(f"- {r}" for r in bundle.rubric)
    message = (
        f"Judge the derived evidence{': ' + bundle.subject if bundle.subject else ''}.\n\n"
        f"Rubric (answer one criteria entry per line, using the criterion text as given):\n"
        f"{rubric}\n\n"
        "Answer with one JSON object only: "
        '{"verdict": "pass|fail|uncertain", "summary": "...", "criteria": [{"criterion": "...", '
        '"result": "pass|fail|uncertain", "rationale": "...", "evidence_refs": ["path"]}]}'
    )
    return InvokeRequest(intent_id="forge.evaluate", message=message)


def _evidence_refs(bundle: EvidenceBundle, snapshot_id: str) -> list[EvidenceRef]:
    refs = []
    for role, items, priority in (("source", bundle.source, 50), ("derived", bundle.derived, 100)):
        for item in items:
            cut = " (cut: the file is longer)" if item.truncated else ""
            refs.append(
                EvidenceRef(
                    id=f"{role}:{item.path}",
                    class_=f"{role}_evidence",
                    classification="INTERNAL",
                    payload_hash=item.sha256,
                    snapshot_id=snapshot_id,
                    summary=f"[{role} evidence] {item.path}{cut}\n{item.text}",
                    priority=priority,
                )
            )
    return refs


def parse_verdict(text: str, rubric: Sequence[str]) -> tuple[Verdict | None, list[str]]:
    """The verdict in a model's answer, validated against VERDICT_SCHEMA and the rubric."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end < start:
            return None, ["the answer holds no JSON object"]
        body = body[start : end + 1]
    try:
        document = json.loads(body)
    except ValueError as exc:
        return None, [f"the answer is not JSON: {exc}"]
    problems = [
        f"{'/'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
        for err in sorted(_VALIDATOR.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        return None, problems
    verdict = Verdict.model_validate(document)
    judged = {c.criterion.strip().lower() for c in verdict.criteria}
    missing = [r for r in rubric if r.strip().lower() not in judged]
    if missing:
        return None, [f"criteria: no result for rubric criterion {m!r}" for m in missing]
    return verdict, []
