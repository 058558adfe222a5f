"""Client-side run operations shared by the CLI (and later the API): load, submit, observe."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Link
from temporalio.client import (
    Client,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError

from schemas.artifacts import ArtifactRef
from schemas.budget import BudgetLimits
from schemas.compiled import CompiledPlan
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import PlannerCandidate
from schemas.run import RunInput, RunResult
from schemas.run_source import ObjectiveSource, PlanSource
from schemas.scope import DEFAULT_TENANT, Scope, tenant_tag
from schemas.spelling import Named, Spelled
from workers.plugin import ForgePlugin
from workers.services.run_reads import tenant_attribute_fix
from workers.services.temporal_connect import open_client
from workers.settings import Settings
from workers.telemetry import tracing
from workflows.policies import TENANT_ATTRIBUTE, tenant_attributes, tenant_priority
from workflows.run import CompiledRunWorkflow

if TYPE_CHECKING:
    from activities.store.admissions import AdmissionStore
    from activities.store.artifacts import ArtifactStore
    from compiler.plan.context import CompileContext


# The root span of every run's trace (docs/observability.md).
SUBMIT_SPAN = "forge.run.submit"


class PlanFileError(ForgeError, ValueError):
    """A plan file that cannot be loaded; the message names the file and the field."""

    code = ErrorCode.PLAN_FILE_INVALID


def load_plan_document(path: Path, raw: Any) -> dict[str, Any]:
    """Inline every step's `code_file` (relative to the plan file) as its frozen `code`."""
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        return raw if isinstance(raw, dict) else {"steps": raw}
    steps = []
    for i, step in enumerate(raw["steps"]):
        if isinstance(step, dict) and "code_file" in step:
            step = dict(step)
            rel = step.pop("code_file")
            if "code" in step:
                raise PlanFileError(f"{path}: steps[{i}] has both code and code_file; keep one")
            source = (path.parent / str(rel)).resolve()
            if not source.is_file():
                raise PlanFileError(f"{path}: steps[{i}].code_file {rel!r} does not exist")
            step["code"] = source.read_text(encoding="utf-8")
        steps.append(step)
    return {**raw, "steps": steps}


def new_run_id(tenant: str = DEFAULT_TENANT) -> str:
    """A new run (and workflow) id that says whose run it is.

    `run-<YYYYMMDD-HHMMSS UTC>-<6 hex>`, then for any tenant but the default its tag (`-t` and
    8 hex of its id, schemas.scope.tenant_tag).
    """
    return f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}{tenant_tag(tenant)}"


def bind_inputs(
    candidate: PlannerCandidate, given: Mapping[str, Path], store: ArtifactStore, scope: Scope
) -> dict[str, ArtifactRef]:
    """Upload each --input NAME=PATH under its declared input/ path; names must match the plan.

    The files become artifacts of the scope's tenant: the run reads them in that scope.
    """
    declared = {d.name: d for d in candidate.run_inputs}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        names = tuple(Named("input", n, "") for n in unknown)
        raise PlanFileError("", code=ErrorCode.PARAMETER_INVALID).spell(
            Spelled(
                ", ".join(f"{{{i}}}" for i in range(len(names)))
                + " is not a run input of this plan; declared: "
                + _braced(", ".join(sorted(declared)) or "none"),
                names,
            ),
            _INPUTS_HINT,
        )
    missing = sorted(n for n, d in declared.items() if d.required and n not in given)
    if missing:
        names = tuple(Named("input", n) for n in missing)
        raise PlanFileError("", code=ErrorCode.PARAMETER_INVALID).spell(
            Spelled(
                "missing required input(s): "
                + ", ".join(
                    f"{{{i}}} (" + _braced(declared[n].path) + ")" for i, n in enumerate(missing)
                ),
                names,
            ),
            _INPUTS_HINT,
        )
    refs = {}
    for name, path in given.items():
        if not path.is_file():
            raise PlanFileError(
                f"--input {name}={path}: no such file",
                code=ErrorCode.PARAMETER_INVALID,
                hint="give --input NAME=PATH with the path of an existing file",
            )
        refs[name] = store.put_file(
            scope, path, logical_path=declared[name].path.removeprefix("./")
        )
    return refs


def _braced(text: str) -> str:
    """`text` as a literal part of a Spelled template."""
    return text.replace("{", "{{").replace("}", "}}")


_INPUTS_HINT = Spelled(
    "give {0} for each run input the plan declares (its run_inputs)", (Named("input", "NAME"),)
)
_INPUT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def looks_like_objective(arg: Path) -> bool:
    """Whether `forge run ARG` names an objective rather than a plan file."""
    text = str(arg)
    if arg.suffix.lower() in (".json", ".yaml", ".yml") or arg.exists():
        return False
    return " " in text.strip() or "/" not in text


def bind_objective_inputs(
    given: Mapping[str, Path], store: ArtifactStore, scope: Scope
) -> dict[str, ArtifactRef]:
    """Upload each --input NAME=PATH of an objective run to input/NAME<suffix of PATH>.

    The planner sees them at those paths (with their receipts) and plans steps that read them.
    """
    refs = {}
    for name, path in sorted(given.items()):
        if not _INPUT_NAME.fullmatch(name):
            raise PlanFileError(
                f"--input {name}=...: a run input name is letters, digits, '_' or '-' "
                "(it becomes the file name under input/)",
                code=ErrorCode.PARAMETER_INVALID,
                hint="rename the input: letters, digits, '_' or '-'",
            )
        if not path.is_file():
            raise PlanFileError(
                f"--input {name}={path}: no such file",
                code=ErrorCode.PARAMETER_INVALID,
                hint="give --input NAME=PATH with the path of an existing file",
            )
        refs[name] = store.put_file(scope, path, logical_path=f"input/{name}{path.suffix.lower()}")
    return refs


@dataclass(frozen=True)
class CheckedPlan:
    """A plan document that compiled: checked before anything is uploaded or started."""

    document: dict[str, Any]
    candidate: PlannerCandidate
    compiled: CompiledPlan
    profile_ref: str | None  # the profile the submitter named (CompileContext.profile_ref)


def check_plan(document: dict[str, Any], ctx: CompileContext) -> CheckedPlan:
    """Compile a plan document early, so a rejected plan never reaches Temporal.

    Raises:
        CompilerError: every problem of the plan, each with its step and field.
    """
    from compiler.plan.parse import parse_candidate
    from compiler.plan.pipeline import compile_plan

    candidate = parse_candidate(document)
    return CheckedPlan(document, candidate, compile_plan(candidate, ctx=ctx), ctx.profile_ref)


def prepare_plan_run(
    plan: CheckedPlan,
    plan_name: str,
    inputs: Mapping[str, Path],
    store: ArtifactStore,
    *,
    scope: Scope,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    params: Mapping[str, str] | None = None,
) -> RunInput:
    """Upload a checked plan's inputs and the plan itself; the RunInput that starts the run.

    `scope` is built once, by the submitter, and travels with the run from here on. Caps
    given here fill in the other cap from the plan's profile. `params` (`--param NAME=VALUE`)
    are checked against the plan's declared parameters before anything is uploaded; the run
    carries them typed.

    Raises:
        ParameterInvalid: a parameter the plan does not declare, a value not of its type, or
            a parameter with no default that was not given.
        PlanFileError: an input the plan does not declare, a required one missing, or no file.
    """
    from compiler.plan.params import bind_params

    given = params or {}
    bound = bind_params(plan.candidate.parameters, given)
    refs = bind_inputs(plan.candidate, inputs, store, scope)
    plan_ref = store.put_bytes(
        scope,
        plan_bytes(plan.document),
        logical_path=f"meta/plans/{plan_name}",
        media_type="application/json",
    )
    snapshot = plan.compiled.profile_snapshot
    budgets = snapshot.profile.budgets
    return RunInput(
        run_id=new_run_id(scope.tenant),
        scope=scope,
        source=PlanSource(plan_ref=plan_ref),
        inputs=refs,
        params={name: bound[name] for name in sorted(given)},
        budget=BudgetLimits(
            max_tokens=max_tokens or budgets.max_tokens_per_run,
            max_cost_usd=max_cost or budgets.max_cost_usd_per_run,
        )
        if max_tokens or max_cost
        else None,
        profile_ref=snapshot.profile_id if plan.profile_ref else None,
        profile_document=(
            snapshot.profile.model_dump(mode="json") if snapshot.scope == "run" else None
        ),
    )


def prepare_objective_run(
    objective: str,
    inputs: Mapping[str, Path],
    store: ArtifactStore,
    *,
    scope: Scope,
    profile: str | None = None,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    planner_provider: str | None = None,
    params: Mapping[str, str] | None = None,
) -> RunInput:
    """Upload an objective run's inputs; the RunInput that starts it (planned by the workflow).

    `planner_provider` (planner_provider_of) routes the planner's call to a worker that has it.
    `params` go to the run as given (strings): the planner declares them and each step coerces
    them to the declared type.

    Raises:
        CompilerError: an objective longer than OBJECTIVE_MAX (E_TOO_LARGE), before any upload.
        PlanFileError: an input name that cannot be a file name, or an input that is no file.
    """
    from compiler.plan.parse import check_objective

    check_objective(objective)
    refs = bind_objective_inputs(inputs, store, scope)
    limits = BudgetLimits(max_tokens=max_tokens, max_cost_usd=max_cost)
    return RunInput(
        run_id=new_run_id(scope.tenant),
        scope=scope,
        source=ObjectiveSource(objective=objective, planner_provider=planner_provider),
        inputs=refs,
        params=dict(params or {}),
        profile_ref=profile,
        budget=limits if max_tokens or max_cost else None,
    )


async def connect(settings: Settings) -> Client:
    """A client for the configured cluster, or the embedded dev server (started if needed)."""
    return await open_client(settings, plugins=[ForgePlugin()])


async def start_run(
    client: Client,
    settings: Settings,
    run: RunInput,
    admissions: AdmissionStore | None = None,
    *,
    links: Sequence[Link] = (),
) -> WorkflowHandle[CompiledRunWorkflow, RunResult]:
    """Start the run's workflow; a run id is used once, ever.

    With telemetry on, the workflow starts inside the root span of the run's trace (its id
    derived from the run id: workers/telemetry/tracing.py), linked to `links` (the API request
    or schedule firing that asked for the run).

    Its streams and events are keyed by it: a second run under the same id would read the
    first one's records. It is admitted under its tenant's quotas first (`admissions`: the
    caller's store, if it holds one).

    Raises:
        WorkflowAlreadyStartedError: a run with this id exists (running or ended).
        ForgeError: SETTINGS_INVALID, the namespace has no ForgeTenant search attribute.
        ValueError: the run id does not end with its tenant's tag (make it with new_run_id).
        QuotaExceeded: the tenant is at a quota (workers/services/quotas.py); nothing started.
    """
    from workers.services import quotas

    tag = tenant_tag(run.scope.tenant)
    if not run.run_id.endswith(tag):
        raise ValueError(
            f"run id {run.run_id!r} of tenant {run.scope.tenant!r} must end with {tag!r}: "
            "make it with new_run_id(tenant)"
        )
    async with quotas.admitted(client, settings.database_url, run, admissions) as run:
        with (
            tenant_attribute_registered(settings.namespace),
            tracing.run_span(run.run_id, run.scope.tenant, SUBMIT_SPAN, links=links),
        ):
            return await client.start_workflow(
                CompiledRunWorkflow.run,
                run,
                id=run.run_id,
                task_queue=settings.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                memo={"tenant": run.scope.tenant},  # whose run it is, before its first event
                search_attributes=tenant_attributes(run.scope.tenant),
                priority=tenant_priority(run.scope.tenant),  # a flooding tenant waits on itself
            )


@contextmanager
def tenant_attribute_registered(namespace: str) -> Iterator[None]:
    """Temporal's refusal of an unregistered ForgeTenant, as what to do about it."""
    try:
        yield
    except RPCError as exc:
        if TENANT_ATTRIBUTE.name not in exc.message:
            raise
        raise ForgeError(
            f"Temporal namespace {namespace!r} has no search attribute "
            f"{TENANT_ATTRIBUTE.name} (Keyword), which every Forge workflow carries",
            code=ErrorCode.SETTINGS_INVALID,
            hint=tenant_attribute_fix(namespace),
        ) from None


def outputs_dir(settings: Settings, run_id: str) -> Path:
    return settings.home / "outputs" / run_id


def export_outputs(settings: Settings, store: ArtifactStore, result: RunResult) -> list[Path]:
    """Copy a finished run's outputs out of the store (in the run's scope) for people to open."""
    root = outputs_dir(settings, result.run_id)
    written = []
    for ref in result.outputs:
        dest = root / ref.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        store.get_to_file(result.scope, ref.sha256, dest)
        written.append(dest)
    return written


def plan_bytes(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, sort_keys=True).encode("utf-8")
