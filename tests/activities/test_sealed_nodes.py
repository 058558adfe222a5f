"""Where a capsule run's steps go: sealed code stays on the run's queue unless it evaluates."""

from datetime import UTC, datetime

from activities.capsules.instantiate import sealed_nodes
from activities.store.artifacts import LocalArtifactStore
from compiler.capsule.seal import capsule_hash
from schemas.capsule import CapsuleVersion
from schemas.scope import Scope
from tests.store.capsules import build_capsule, compiled_plan


def version_of(tmp_path, **program: object) -> CapsuleVersion:
    content = build_capsule(LocalArtifactStore(tmp_path / "artifacts"), Scope.default())
    [step] = content.programs
    content = content.model_copy(update={"programs": [step.model_copy(update=program)]})
    return CapsuleVersion(
        tenant_id="default",
        name="totals",
        version=1,
        capsule_hash=capsule_hash(content),
        content=content,
        created_at=datetime.now(UTC),
        created_by="test",
    )


def test_sealed_frozen_code_needs_no_model_worker(tmp_path):
    [node] = sealed_nodes(version_of(tmp_path), compiled_plan(), set())
    assert node.model_provider is None and node.replay == []


def test_sealed_code_that_evaluated_goes_to_the_evaluators_workers(tmp_path):
    plan = compiled_plan()
    evaluator = plan.profile_snapshot.profile.executor_by_backend["evaluator"]
    [node] = sealed_nodes(version_of(tmp_path, evaluates=True), plan, set())
    assert node.model_provider == evaluator.model_binding_ref.split(":")[0]


def test_a_sealed_session_step_replays_its_programs_on_the_runs_queue(tmp_path):
    version = version_of(tmp_path, source="session")
    [node] = sealed_nodes(version, compiled_plan(), set())
    assert node.replay == [version.content.programs[0].cells[0].code]
    assert node.model_provider is None
    [fresh] = sealed_nodes(version, compiled_plan(), {node.step_key})
    assert fresh.replay == []  # fresh code: the executor writes it, under the same contract
