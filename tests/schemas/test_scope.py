"""Scope: one model for tenant, project and actor, which also reads the shapes before it."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from schemas.artifacts import ArtifactRef
from schemas.bridge import BridgePolicy
from schemas.events import SYSTEM_ACTOR, Actor, Event, EventDraft
from schemas.models import CallScope
from schemas.recipes import RecipePlanInput, RecipesMatchInput
from schemas.run import (
    CompileInput,
    FinalizeInput,
    PlanInput,
    ReusableStep,
    ReuseInput,
    RunInput,
    RunResult,
    StepExecuteInput,
)
from schemas.scope import DEFAULT_PROJECT, DEFAULT_TENANT, Scope, legacy_scope

ROOT = Path(__file__).resolve().parents[2]
REF = ArtifactRef(
    artifact_id="sha256:" + "a" * 64, path="p", sha256="sha256:" + "a" * 64, size_bytes=1
)
ACME = Scope(tenant="acme", project="billing")
ANN = Actor(id="ann", name="Ann", role="approver", kind="human")

# Each model that carried flat tenant_id/project_id, with the rest of a valid payload.
LEGACY: dict[type[BaseModel], dict[str, Any]] = {
    RunInput: {"run_id": "r1", "objective": "audit invoices"},
    CompileInput: {"run_id": "r1", "source_ref": REF},
    StepExecuteInput: {"run_id": "r1", "compiled_ref": REF, "step_key": "s", "cause_event_id": "e"},
    ReuseInput: {
        "run_id": "r2",
        "resumed_from": "r1",
        "step": ReusableStep(step_key="s", contract_hash="c", input_hashes={}, outputs=[]),
        "contract_hash": "c",
        "inputs": {},
        "cause_event_id": "e",
    },
    FinalizeInput: {"run_id": "r1", "compiled_ref": REF, "outputs": [], "cause_event_id": "e"},
    PlanInput: {"run_id": "r1", "objective": "audit invoices"},
    BridgePolicy: {
        "run_id": "r1",
        "step_key": "s",
        "attempt": 1,
        "contract_hash": "c",
        "bridge_call_budget": 3,
    },
    CallScope: {"stream_id": "r1:step:s", "call_key": "exec:turn-1"},
}


@pytest.mark.parametrize("model", list(LEGACY), ids=lambda m: m.__name__)
def test_every_scoped_model_reads_the_flat_shape_and_writes_the_new_one(
    model: type[BaseModel],
) -> None:
    rest = LEGACY[model]
    old = model.model_validate({**rest, "tenant_id": "acme", "project_id": "billing"})
    assert old.scope == ACME  # type: ignore[attr-defined]
    new = model.model_validate({**rest, "scope": ACME})
    assert old == new
    dumped = old.model_dump(mode="json")
    assert "tenant_id" not in dumped and dumped["scope"]["tenant"] == "acme"
    assert model.model_validate_json(old.model_dump_json()) == old
    # A flat payload with only a tenant (the project had its default) keeps the default project.
    only_tenant = model.model_validate({**rest, "tenant_id": "acme"})
    assert only_tenant.scope == Scope(tenant="acme")  # type: ignore[attr-defined]
    # Both shapes at once is refused, never merged.
    with pytest.raises(ValidationError):
        model.model_validate({**rest, "scope": ACME, "tenant_id": "globex"})


def test_a_legacy_payload_as_recorded_by_an_old_worker() -> None:
    """The JSON an older Forge wrote, defaults included, still reads (Temporal replays it)."""
    recorded = {
        "run_id": "r1",
        "plan_ref": None,
        "objective": "audit",
        "inputs": {},
        "profile_ref": None,
        "profile_document": None,
        "tenant_id": "default",
        "project_id": "default",
        "history_threshold": None,
        "budget": None,
        "resumed_from": None,
        "reusable": [],
        "recipe_chain": [],
        "carry": None,
    }
    assert RunInput.model_validate(recorded).scope == Scope.default()
    match = RecipesMatchInput.model_validate({"run_id": "r1", "tenant_id": "acme"})
    assert match.scope == Scope(tenant="acme")
    assert RunResult.model_validate({"run_id": "r1", "status": "completed"}).scope == Scope()
    legacy_plan = {"run_id": "r1", "slug": "x", "chain": [], "mission": "m"}
    assert RecipePlanInput.model_validate(legacy_plan).scope == Scope.default()


def test_activity_inputs_need_a_scope_the_run_entry_defaults_it() -> None:
    for model in (CompileInput, StepExecuteInput, ReuseInput, FinalizeInput, PlanInput):
        with pytest.raises(ValidationError, match="scope"):
            model.model_validate(LEGACY[model])
    assert RunInput.model_validate(LEGACY[RunInput]).scope == Scope.default()


def test_the_event_envelope_moves_tenant_project_and_actor_into_the_scope() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    flat = {"event_id": "e1", "type": "run.started.v1", "timestamp": when}
    old = EventDraft.model_validate({**flat, "actor": ANN, "tenant_id": "acme", "project_id": "b"})
    assert old.scope == Scope(tenant="acme", project="b", actor=ANN)
    assert EventDraft.model_validate({**flat, "actor": ANN}).scope == Scope.default().acting(ANN)
    assert EventDraft.model_validate(flat).scope.actor == SYSTEM_ACTOR
    stored = Event.model_validate(
        {**flat, "tenant_id": "acme", "stream_id": "s", "seq": 1, "content_hash": "h"}
        | {"prev_hash": None}
    )
    assert stored.scope.tenant == "acme"
    with pytest.raises(ValidationError):
        EventDraft.model_validate({**flat, "scope": ACME, "actor": ANN})


@pytest.mark.parametrize("bad", ["", "a/b", "..", ".hidden", "x" * 200, "tab\there", "ünï", "Acme"])
def test_scope_ids_are_safe_names(bad: str) -> None:
    with pytest.raises(ValidationError):
        Scope(tenant=bad)
    with pytest.raises(ValidationError):
        Scope(project=bad)


def test_the_defaults_and_helpers() -> None:
    assert Scope.default() == Scope(tenant=DEFAULT_TENANT, project=DEFAULT_PROJECT)
    assert Scope.default().actor == SYSTEM_ACTOR
    assert Scope.of_tenant("acme") == Scope(tenant="acme")
    assert ACME.acting(ANN).actor == ANN and ACME.acting(ANN).tenant == "acme"
    assert ACME.acting(SYSTEM_ACTOR) is ACME
    assert legacy_scope("not a dict") == "not a dict"
    assert legacy_scope({"scope": {}, "x": 1}) == {"scope": {}, "x": 1}


# ---- "default" is spelled in one place ------------------------------------------------------

_PACKAGES = ("schemas", "activities", "workers", "workflows")
_OWNER = ROOT / "schemas" / "scope_ids.py"


def _scoped_name(name: str | None) -> bool:
    return name is not None and name.lower().startswith(("tenant", "project"))


def _is_default(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "default"


def _spellings(tree: ast.AST) -> list[int]:
    """Lines where a tenant*/project* name gets the literal "default" (field, arg, kw, key)."""
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets, value = [node.target.id], node.value
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            targets += [t.attr for t in node.targets if isinstance(t, ast.Attribute)]
            value = node.value
        elif isinstance(node, ast.keyword):
            targets, value = [node.arg or ""], node.value
        elif isinstance(node, ast.Dict):
            lines += [
                v.lineno
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and _scoped_name(str(k.value)) and _is_default(v)
            ]
            continue
        elif isinstance(node, ast.arguments):
            named = [*node.posonlyargs, *node.args]
            pairs = list(zip(named[len(named) - len(node.defaults) :], node.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d]
            lines += [d.lineno for a, d in pairs if _scoped_name(a.arg) and _is_default(d)]
            continue
        else:
            continue
        if any(_scoped_name(t) for t in targets):
            # `tenant_id: str = "default"`, `tenant="default"`, `Field(default="default")`
            inner = [value] if value is not None else []
            if isinstance(value, ast.Call):
                inner += [k.value for k in value.keywords if k.arg == "default"]
                inner += value.args[:1]
            lines += [v.lineno for v in inner if _is_default(v)]
    return lines


def test_default_tenant_and_project_are_spelled_only_in_schemas_scope_ids() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in _PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != _OWNER
        for line in _spellings(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "use schemas.scope_ids.DEFAULT_TENANT / DEFAULT_PROJECT or Scope.default()"


@pytest.mark.parametrize(
    "source",
    [
        'class M:\n    tenant_id: str = "default"\n',
        'class M:\n    project: str = Field(default="default")\n',
        'def f(tenant: str = "default"): ...\n',
        'def f(*, project_id="default"): ...\n',
        'f(tenant_id="default")\n',
        'x = {"tenant_id": "default"}\n',
        'self.tenant = "default"\n',
    ],
)
def test_the_walk_finds_each_way_of_spelling_it(source: str) -> None:
    assert _spellings(ast.parse(source)) == [len(source.splitlines())]


def test_the_walk_leaves_other_defaults_alone() -> None:
    clean = 'namespace: str = "default"\nsplit = {"source": "default"}\nf(tenant=DEFAULT_TENANT)\n'
    assert _spellings(ast.parse(clean)) == []
