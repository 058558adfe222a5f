"""`forge run|worker|resume`: submitting a plan or an objective and running it on Temporal."""

from __future__ import annotations

import concurrent.futures
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope_ids import DEFAULT_PROJECT, DEFAULT_TENANT
from workers.cli.common import (
    ProjectOption,
    TenantOption,
    compile_context,
    fail,
    fail_error,
    out,
    read_plan,
    reject_plan,
    run_async,
    scope_of,
    settings,
    temporal_client,
)
from workers.cli.views import follow

if TYPE_CHECKING:
    from temporalio.client import Client

    from schemas.run import RunInput
    from workers.process.worker import ForgeWorker, Services
    from workers.settings import Settings


def _parse_inputs(pairs: list[str]) -> dict[str, Path]:
    given: dict[str, Path] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            fail(
                f"--input {pair!r}: expected NAME=PATH, e.g. --input time_entries=data.csv",
                code=ErrorCode.PARAMETER_INVALID,
            )
        given[name] = Path(path)
    return given


def run_cmd(
    plan_file: Annotated[Path | None, typer.Argument(metavar="[PLAN.json]")] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            "-o",
            metavar="TEXT",
            help='Run an objective instead of a plan (also: `forge run "TEXT"`): a clearly '
            "matching recipe becomes the plan, else the planner model writes one.",
        ),
    ] = None,
    inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            "-i",
            metavar="NAME=PATH",
            help="A run input: declared by the plan, or for an objective, put at input/NAME.ext.",
        ),
    ] = None,
    params: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            metavar="NAME=VALUE",
            help="A run parameter the plan declares (its steps read it with "
            "forge_bridge.param); for an objective, the planner declares it.",
        ),
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p")] = None,
    detach: Annotated[
        bool,
        typer.Option("--detach", help="Start the run and return; watch it with `forge watch RUN`."),
    ] = False,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="Token cap for this run (default: profile's)."),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", min=0.0001, help="USD cap for this run (default: profile's)."),
    ] = None,
    tenant: TenantOption = DEFAULT_TENANT,
    project: ProjectOption = DEFAULT_PROJECT,
) -> None:
    """Compile PLAN.json (or match --objective to a recipe), run it on Temporal, show it live."""
    from compiler.errors import CompilerError
    from compiler.plan.params import ParameterInvalid, parse_assignments
    from compiler.plan.parse import check_objective
    from workers.process.worker import Services
    from workers.services import queues, runs

    scope = scope_of(tenant, project)  # built once here; the run carries it everywhere
    s = settings()
    if max_cost is not None and not math.isfinite(max_cost):
        fail(
            f"--max-cost must be a finite amount of USD, not {max_cost}",
            code=ErrorCode.USAGE_INVALID,
        )
    if plan_file is not None and objective is None and runs.looks_like_objective(plan_file):
        # `forge run "OBJECTIVE" --input NAME=PATH`: text that names no plan file is the objective.
        objective, plan_file = str(plan_file), None
    if (plan_file is None) == (objective is None):
        fail(
            "give a plan file or an objective (exactly one)",
            'e.g. `forge run plan.json` or `forge run "reconcile invoices and rate cards"`',
            code=ErrorCode.USAGE_INVALID,
        )
    try:
        given = parse_assignments(params or [])
    except ParameterInvalid as exc:
        fail_error(exc)
    if objective is not None:
        if not objective.strip():
            fail("the objective is empty: say what the run should do", code=ErrorCode.USAGE_INVALID)
        try:
            check_objective(objective)  # before anything is stored or started
        except CompilerError as exc:
            reject_plan(exc, "--objective")
        try:
            ctx = compile_context(profile)
            planner = queues.planner_provider_of(ctx)
            needs = queues.profile_providers(ctx, planner=True)
        except CompilerError as exc:
            reject_plan(exc, "--profile")
        services = Services.from_settings(s)
        try:
            run = runs.prepare_objective_run(
                objective,
                _parse_inputs(inputs or []),
                services.artifacts,
                scope=scope,
                profile=profile,
                max_tokens=max_tokens,
                max_cost=max_cost,
                planner_provider=planner,
                params=given,
            )
        except runs.PlanFileError as exc:
            fail_error(exc)
        out.print(f"run [bold]{run.run_id}[/]: matching the objective to a recipe or the planner …")
        raise typer.Exit(run_async(_run(s, services, run, detach, needs)))
    assert plan_file is not None
    document = read_plan(plan_file)
    ctx = compile_context(profile)
    try:  # compile here first: a rejected plan never reaches Temporal
        plan = runs.check_plan(document, ctx)
    except CompilerError as exc:
        reject_plan(exc, str(plan_file))
    services = Services.from_settings(s)
    try:
        run = runs.prepare_plan_run(
            plan,
            plan_file.name,
            _parse_inputs(inputs or []),
            services.artifacts,
            scope=scope,
            max_tokens=max_tokens,
            max_cost=max_cost,
            params=given,
        )
    except (runs.PlanFileError, ParameterInvalid) as exc:
        fail_error(exc)
    out.print(
        f"compiled {len(plan.compiled.steps)} steps · plan {plan.compiled.plan_hash[:19]}… · "
        f"run [bold]{run.run_id}[/]"
    )
    needs = queues.model_providers(plan.compiled)
    code = run_async(_run(s, services, run, detach, needs))
    raise typer.Exit(code)


async def _run(
    s: Settings, services: Services, run: RunInput, detach: bool, needs: set[str]
) -> int:
    return await run_started(await temporal_client(s), s, services, run, detach, needs)


async def _unserved(
    client: Client, s: Settings, needs: set[str], own: frozenset[str] = frozenset()
) -> set[str]:
    """The model providers the run may need that no worker on its task queue serves now."""
    from workers.services import queues

    return needs - own - await queues.polled_providers(client, s.task_queue, needs - own)


def _unserved_note(missing: set[str], s: Settings, wait_s: int) -> None:
    out.print(
        f"[yellow]note:[/] no worker serves {', '.join(sorted(missing))} models on task queue "
        f"{s.task_queue}; model work fails after {wait_s} s unless one starts "
        "(`forge worker` with ANTHROPIC_API_KEY, or FORGE_MODEL_SCRIPT, set)"
    )


async def run_started(
    client: Client,
    s: Settings,
    services: Services,
    run: RunInput,
    detach: bool,
    needs: set[str],
) -> int:
    from temporalio.api.enums.v1 import TaskQueueType

    from workers.services import queues, runs

    if detach:
        missing = await _unserved(client, s, needs)
        await runs.start_run(client, s, run, services.admissions)
        out.print(
            f"started [bold]{run.run_id}[/] on task queue {s.task_queue}. "
            f"Follow it with `forge watch {run.run_id}`."
        )
        _print_trace(run.run_id)
        workflows = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
        if not await queues.polled(client, s.task_queue, workflows):
            out.print(
                f"[yellow]note:[/] no worker polls task queue {s.task_queue} now; run "
                "`forge worker` (in another terminal, or on any host) so the run makes progress."
            )
        elif missing:
            _unserved_note(missing, s, run.model_wait_s)
        return 0
    # The in-process worker's "activity failed" warnings (with tracebacks) would interleave
    # with the live view, which already reports each failed step with its class and reason.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    with concurrent.futures.ThreadPoolExecutor(max_workers=s.worker_activity_slots) as pool:
        async with _worker(client, s, services, pool) as worker:
            missing = await _unserved(client, s, needs, worker.providers)
            if missing:  # this process cannot serve it, nor another worker now: say so, soon
                run = run.model_copy(update={"model_wait_s": queues.UNSERVED_WAIT_S})
                _unserved_note(missing, s, run.model_wait_s)
            handle = await runs.start_run(client, s, run, services.admissions)
            _print_trace(run.run_id)
            return await follow(handle, s, services)


def _print_trace(run_id: str) -> None:
    """The run's trace id, for finding it in a tracing backend (telemetry on only)."""
    from workers.telemetry import tracing

    if tracing.installed():
        out.print(f"trace {tracing.format_trace_id(tracing.run_trace_id(run_id))}")


def _require_sandbox(s: Settings) -> None:
    """Fail closed: no worker polls for steps it could not run in a sandbox (exit 2, one line)."""
    from activities.sandbox.workspace import WorkspaceViolation
    from workers.services.sandbox_gate import require_sandbox

    try:
        require_sandbox(s)
    except WorkspaceViolation as exc:
        _workspace_root_failure(exc)
    except ForgeError as exc:
        fail_error(exc)


def _workspace_root_failure(exc: ForgeError) -> NoReturn:
    fail(f"workspace root {exc}", "set FORGE_WORKSPACE_ROOT as it says", code=exc.code)


def _worker(
    client: Client,
    s: Settings,
    services: Services,
    pool: concurrent.futures.Executor,
    *,
    sandbox_checked: bool = False,
) -> ForgeWorker:
    from activities.sandbox.workspace import WorkspaceViolation
    from workers.process.worker import build_worker

    if not sandbox_checked:
        _require_sandbox(s)
    try:
        return build_worker(client, s, services, pool)
    except WorkspaceViolation as exc:
        _workspace_root_failure(exc)


def _version_note(s: Settings) -> str:
    """`, build B of deployment D` for a versioned worker (docs/deployment.md); else nothing."""
    from workers.process.versioning import version_of

    version = version_of(s)
    if version is None:
        return ""
    return f", build {version.build_id} of deployment {version.deployment_name}"


def worker_cmd(
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            metavar="json|text",
            help="Log lines as text (the default) or JSON lines with trace and span ids "
            "(FORGE_LOG_FORMAT).",
        ),
    ] = None,
) -> None:
    """Run a worker for the task queue until interrupted (Ctrl-C)."""
    from workers.process.worker import Services
    from workers.telemetry.observe import MetricsPortError, observed

    s = settings()
    if log_format is not None and log_format not in ("json", "text"):
        fail(
            f"--log-format {log_format!r} is not a log format",
            "use --log-format json or --log-format text",
            code=ErrorCode.USAGE_INVALID,
        )
    _require_sandbox(s)  # before anything connects: a worker that cannot sandbox never polls
    from workers.telemetry import tracing

    tracing.install(s, "worker")  # FORGE_TELEMETRY off: nothing

    async def go() -> None:
        async with observed(s, "worker", log_format) as endpoint:
            if endpoint is not None:
                out.print(f"metrics at [bold]{endpoint}[/]")
            client = await temporal_client(s)
            services = Services.from_settings(s)
            with concurrent.futures.ThreadPoolExecutor(max_workers=s.worker_activity_slots) as pool:
                worker = _worker(client, s, services, pool, sandbox_checked=True)
                queues = ", ".join(f"[bold]{q}[/]" for q in worker.task_queues)
                out.print(
                    f"worker polling {queues} (namespace {s.namespace}{_version_note(s)}); "
                    "Ctrl-C to stop"
                )
                await worker.run()

    try:
        run_async(go())
    except KeyboardInterrupt:
        out.print("worker stopped")
    except MetricsPortError as exc:
        fail_error(exc)


def resume_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    from_step: Annotated[
        str | None,
        typer.Option(
            "--from", metavar="STEP", help="Re-run this step and everything downstream of it."
        ),
    ] = None,
    detach: Annotated[bool, typer.Option("--detach")] = False,
) -> None:
    """Run RUN's plan again, reusing completed steps whose contract and inputs are unchanged.

    Reused outputs are verified in the store, not re-executed; the rest runs again.
    """
    from compiler.errors import CompilerError
    from schemas.run_source import ResumeSource
    from workers.process.worker import Services
    from workers.services import queues, runs
    from workers.services.resume import resume_input

    s = settings()
    services = Services.from_settings(s)

    async def go() -> int:
        client = await temporal_client(s)
        ctx = compile_context(None)
        try:
            run, plan = await resume_input(client, services, run_id, from_step, ctx)
        except runs.PlanFileError as exc:
            fail_error(exc)
        except CompilerError as exc:
            reject_plan(exc, f"the plan of {run_id}")
        assert isinstance(run.source, ResumeSource)
        names = ", ".join(r.step_key for r in run.source.reusable) or "none"
        out.print(f"resuming {run_id} as [bold]{run.run_id}[/]; may reuse: {names}")
        needs = queues.model_providers(plan)  # as `forge run PLAN` decides: its model steps
        return await run_started(client, s, services, run, detach, needs)

    raise typer.Exit(run_async(go()))
