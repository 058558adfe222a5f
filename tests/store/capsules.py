"""A realistic CapsuleContent for tests: a compiled one-step plan, its code and receipts stored.

`build_capsule` stores every blob the content names in the artifact store for the scope, so
the content can be added to a CapsuleStore as it is; `goal` and `code` vary the content (and so
its capsule_hash).
"""

from __future__ import annotations

import json
from functools import lru_cache

from activities.store.artifacts import ArtifactStore
from schemas.artifacts import ArtifactRef
from schemas.capsule import (
    CapsuleContent,
    CapsuleProvenance,
    CodeCell,
    StepProgram,
    StepReceipts,
)
from schemas.compiled import CompiledPlan
from schemas.scope import Scope
from tests.compiler.conftest import compile_raw
from tests.workflows.plans import code_step, plan, write_json

STEP = "s0"
CODE = write_json("output/s0.json", '{"total": 3}')


@lru_cache(maxsize=1)
def compiled_plan() -> CompiledPlan:
    """A one-step plan with frozen code, compiled by the real passes over the stdlib."""
    return compile_raw(plan(code_step(STEP, CODE, ["output/s0.json"])))


def _put_json(artifacts: ArtifactStore, scope: Scope, value: object, path: str) -> ArtifactRef:
    data = json.dumps(value, sort_keys=True).encode()
    return artifacts.put_bytes(scope, data, logical_path=path, media_type="application/json")


def build_capsule(
    artifacts: ArtifactStore,
    scope: Scope,
    *,
    goal: str = "Total the rows of {invoices}.",
    code: str = CODE,
    run_id: str = "run-source-1",
) -> CapsuleContent:
    """A capsule of the compiled plan whose every blob is stored for `scope`'s tenant."""
    compiled = compiled_plan()
    [step] = compiled.steps
    plan_ref = artifacts.put_bytes(
        scope,
        compiled.model_dump_json().encode(),
        logical_path="capsule/plan.json",
        media_type="application/json",
    )
    cell = artifacts.put_bytes(
        scope, code.encode(), logical_path=f"capsule/{STEP}/turn-1.py", media_type="text/x-python"
    )
    receipt = {"step_id": STEP, "contract_hash": step.contract_hash}
    receipts = StepReceipts(
        preflight=_put_json(artifacts, scope, {**receipt, "phase": "pre"}, "meta/pre.json"),
        postflight=_put_json(artifacts, scope, {**receipt, "phase": "post"}, "meta/post.json"),
    )
    profile = compiled.profile_snapshot
    return CapsuleContent(
        goal_template=goal,
        parameter_schema={"type": "object", "properties": {}, "additionalProperties": False},
        plan_template=plan_ref,
        plan_hash=compiled.plan_hash,
        contracts={s.step_key: s.contract_hash for s in compiled.steps},
        programs=[
            StepProgram(
                step_key=STEP,
                contract_hash=step.contract_hash,
                backend=step.backend,
                source="frozen",
                cells=[CodeCell(turn=1, code=cell, exit_code=0, verified=True)],
            )
        ],
        governance={"egress": profile.profile.egress.model_dump(mode="json")},
        isolation_policy={"isolation": "bwrap"},
        provenance=CapsuleProvenance(
            source_run_id=run_id,
            plan_hash=compiled.plan_hash,
            profile_snapshot_hash=profile.snapshot_hash,
            library_snapshot_hash=compiled.library_snapshot_hash,
            receipts={STEP: receipts},
        ),
    )
