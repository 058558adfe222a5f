"""capsule__instantiate: a capsule run's front end, the sealed plan re-verified for one run.

No recipe match, no planner, no compile pass: the capsule's compiled plan is loaded from the
tenant's artifact store (its bytes checked against the sha256 the capsule names), the version's
hash is checked against the one the run was started with, and every contract is re-hashed from
the plan itself (compiler/capsule/seal.check_plan). Sealed steps get their recorded programs to
run (StepNode.replay) and stay on the run's own task queue: no model is needed for them. Steps
that get fresh code keep their model queue.
"""

from pydantic import ValidationError
from temporalio import activity

from activities.compile.passes import freeze_result, step_nodes
from activities.errors import to_application_error
from activities.store.artifacts import ArtifactStore
from activities.store.capsules import CapsuleStore, read_blob
from compiler.capsule.seal import SealBroken, check_plan
from schemas import names
from schemas.capsule import CapsuleInstantiateInput, CapsuleVersion
from schemas.compiled import CompiledPlan
from schemas.errors import ForgeError
from schemas.run import FreezeResult, StepNode
from schemas.scope import Scope


class CapsuleActivities:
    """The capsule store and the artifact store a capsule run's front end reads."""

    def __init__(self, artifacts: ArtifactStore, capsules: CapsuleStore) -> None:
        self._artifacts = artifacts
        self._capsules = capsules

    @activity.defn(name=names.CAPSULE_INSTANTIATE)
    def instantiate(self, inp: CapsuleInstantiateInput) -> FreezeResult:
        """The run's frozen plan and its step nodes, from the capsule version it names."""
        try:
            return self._instantiate(inp)
        except ForgeError as exc:
            raise to_application_error(exc) from None

    def _instantiate(self, inp: CapsuleInstantiateInput) -> FreezeResult:
        spec = inp.capsule
        version = self._capsules.get(inp.scope, spec.name, spec.version)
        if version.capsule_hash != spec.capsule_hash:
            raise SealBroken(
                f"{version.ref} is sealed as {version.capsule_hash}, the run was started for "
                f"{spec.capsule_hash}: start the run again from `forge capsule run`"
            )
        plan = sealed_plan(self._artifacts, inp.scope, version)
        nodes = sealed_nodes(version, plan, set(spec.fresh))
        return freeze_result(version.content.plan_template, plan, nodes)


def sealed_plan(artifacts: ArtifactStore, scope: Scope, version: CapsuleVersion) -> CompiledPlan:
    """The version's compiled plan, its bytes, shape, contracts and plan hash checked.

    Raises:
        SealBroken: the plan blob is missing, altered or not a compiled plan, or a contract no
            longer hashes to what the capsule sealed (CAPSULE_TAMPERED).
    """
    # read_blob: a plan blob missing, corrupt or resized is CAPSULE_TAMPERED.
    where = f"capsule {version.ref} of tenant {scope.tenant!r}"
    data = read_blob(artifacts, scope, version.content.plan_template, where)
    try:
        plan = CompiledPlan.model_validate_json(data)
    except ValidationError as exc:
        raise SealBroken(
            f"{where}: its plan is not a compiled plan ({exc.error_count()} error(s)); "
            "extract or import the capsule again"
        ) from None
    check_plan(version.content, plan)
    return plan


def sealed_nodes(version: CapsuleVersion, plan: CompiledPlan, fresh: set[str]) -> list[StepNode]:
    """The plan's step nodes; a sealed model-coded step replays its programs on the run's queue.

    A structural step of the capsule, or one named in `fresh`, asks the executor for new code
    under the same contract (its model queue kept); evaluator steps still evaluate (seed 000
    §8.3: governed evaluator calls remain), and so does sealed code that called the evaluator
    in the source run: such a step goes to a worker serving the evaluator's model.
    """
    programs = {p.step_key: p for p in version.content.programs}
    evaluator = plan.profile_snapshot.profile.executor_by_backend.get("evaluator")
    judge = names.provider_of(evaluator.model_binding_ref) if evaluator is not None else None
    nodes = []
    for node in step_nodes(plan):
        program = programs.get(node.step_key)
        fresh_code = program is None or program.structural or node.step_key in fresh
        if program is not None and program.source == "session" and not fresh_code:
            node = node.model_copy(
                update={"replay": [c.code for c in program.cells], "model_provider": None}
            )
        if program is not None and program.evaluates and not fresh_code:
            node = node.model_copy(update={"model_provider": judge})
        nodes.append(node)
    return nodes
