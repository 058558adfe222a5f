"""`forge capsule extract|run`: a completed run becomes a capsule; a capsule runs on new data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, get_args

import typer
from rich.markup import escape

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_PROJECT, DEFAULT_TENANT
from workers.cli.common import (
    ProjectOption,
    TenantOption,
    compile_context,
    fail,
    out,
    run_async,
    scope_of,
    settings,
    temporal_client,
)
from workers.cli.run import run_started

if TYPE_CHECKING:
    from schemas.capsule import CapsuleVersion
    from schemas.plan import ScalarType
    from schemas.run import RunResult

__all__ = ["capsule_extract_cmd", "capsule_run_cmd"]


def _pairs(pairs: list[str], option: str, value: str) -> dict[str, str]:
    given: dict[str, str] = {}
    for pair in pairs:
        raw, sep, text = pair.partition("=")
        name = raw.strip()  # the name as it is stored, so "a =1" and "a=2" are one name twice
        if not sep or not name or not text:
            fail(f"{option} {pair!r}: expected NAME={value}", code=ErrorCode.PARAMETER_INVALID)
        if name in given:
            fail(
                f"{option} {name} is given twice",
                f"give {option} {name}= once",
                code=ErrorCode.PARAMETER_INVALID,
            )
        given[name] = text
    return given


def _typed_params(pairs: list[str]) -> dict[str, ScalarType]:
    from schemas.plan import ScalarType

    scalar_types = get_args(ScalarType)
    named: dict[str, ScalarType] = {}
    for name, type_ in _pairs(pairs, "--param", "TYPE").items():
        if type_ not in scalar_types:
            fail(
                f"--param {name}={type_}: the type is one of {', '.join(scalar_types)}",
                code=ErrorCode.PARAMETER_INVALID,
            )
        named[name] = type_  # type: ignore[assignment]  # checked just above
    return named


def capsule_extract_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    name: Annotated[str, typer.Option("--name", "-n", help="The capsule's name.")],
    structural: Annotated[
        list[str] | None,
        typer.Option(
            "--structural",
            metavar="STEP",
            help="A model-coded step that gets fresh code on every run of the capsule.",
        ),
    ] = None,
    params: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            metavar="NAME=TYPE",
            help="Make a value step code read (forge_bridge.param) a parameter: "
            "string, integer, number or boolean.",
        ),
    ] = None,
    tenant: TenantOption = DEFAULT_TENANT,
    project: ProjectOption = DEFAULT_PROJECT,
) -> None:
    """Extract a completed RUN into a version of capsule NAME (no-op if the content is there)."""
    from workers.process.worker import Services
    from workers.services.capsules import CapsuleServices, extract_run

    scope = scope_of(tenant, project)
    s = settings()
    services = Services.from_settings(s)
    caps = CapsuleServices(
        events=services.events,
        artifacts=services.artifacts,
        capsules=services.capsules,
        library=compile_context(None).library,
    )
    version = extract_run(
        caps, scope, run_id, name, structural=structural or [], params=_typed_params(params or [])
    )
    _extracted(version)


def _extracted(version: CapsuleVersion) -> None:
    content = version.content
    if not version.created:
        out.print(
            f"= capsule [bold]{version.ref}[/] already holds this run "
            f"({version.capsule_hash[:19]}…): nothing added"
        )
        return
    inputs = ", ".join(i.name for i in content.inputs) or "none"
    scalars = ", ".join(f"{s.name} ({s.type})" for s in content.scalars) or "none"
    out.print(
        f"[green]✓[/] capsule [bold]{version.ref}[/] · {version.capsule_hash[:19]}… · from "
        f"{content.provenance.source_run_id}"
    )
    out.print(f"  {len(content.programs)} steps; inputs: {inputs}; parameters: {scalars}")
    out.print(f"  run it: forge capsule run {version.ref} --input NAME=PATH …")


def capsule_run_cmd(
    ref: Annotated[str, typer.Argument(metavar="NAME[@V]")],
    inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--input", "-i", metavar="NAME=PATH|URI", help="An input: a local path or s3://."
        ),
    ] = None,
    params: Annotated[
        list[str] | None,
        typer.Option("--param", metavar="NAME=VALUE", help="A scalar parameter's value."),
    ] = None,
    fresh: Annotated[
        list[str] | None,
        typer.Option(
            "--fresh", metavar="STEP", help="Let the executor write new code for this step."
        ),
    ] = None,
    detach: Annotated[
        bool,
        typer.Option("--detach", help="Start the run and return; watch it with `forge watch RUN`."),
    ] = False,
    tenant: TenantOption = DEFAULT_TENANT,
    project: ProjectOption = DEFAULT_PROJECT,
) -> None:
    """Run capsule NAME (newest version, or @V) on new inputs: sealed code, no planning."""
    from temporalio.client import WorkflowFailureError

    from activities.capsules.prepare_run import prepare_capsule_run
    from schemas.run import RunResult
    from schemas.run_source import CapsuleSource
    from workers.process.worker import Services
    from workers.services import runs
    from workers.services.capsule_runs import input_policy

    scope = scope_of(tenant, project)
    s = settings()
    services = Services.from_settings(s)
    given = _pairs(inputs or [], "--input", "PATH|URI")
    policy = input_policy(s, services.tenant_settings.get(scope.tenant))
    prepared = prepare_capsule_run(
        services.capsules,
        services.artifacts,
        policy,
        scope,
        ref,
        run_id=runs.new_run_id(scope.tenant),
        inputs=given,
        params=_pairs(params or [], "--param", "VALUE"),
        fresh=fresh or [],
    )
    assert isinstance(prepared.run.source, CapsuleSource)
    spec = prepared.run.source.capsule
    fresh_note = f"; fresh code for {', '.join(spec.fresh)}" if spec.fresh else ""
    out.print(
        f"capsule [bold]{prepared.version.ref}[/] ({spec.mode}{fresh_note}) · "
        f"{prepared.version.capsule_hash[:19]}… · run [bold]{prepared.run.run_id}[/]"
    )

    async def go() -> int:
        client = await temporal_client(s)
        code = await run_started(client, s, services, prepared.run, detach, prepared.needs)
        if not detach:
            handle = client.get_workflow_handle(prepared.run.run_id, result_type=RunResult)
            try:
                result = await handle.result()
            except WorkflowFailureError:
                return code
            out.print(spending_line(result, spec.fresh))
        return code

    raise typer.Exit(run_async(go()))


def spending_line(result: RunResult, fresh: list[str]) -> str:
    """Where the run's tokens went: none for a sealed run, only fresh steps for a structural one."""
    spent = {k: st.usage.tokens for k, st in result.steps.items() if st.usage.tokens}
    total = sum(spent.values())
    if not total:
        done = [k for k, st in result.steps.items() if st.status == "done"]
        if not done:  # nothing to credit to sealed code: say what happened instead
            return f"tokens: 0 (no step ran: the run {result.status})"
        fresh_done = sorted(set(done) & set(fresh))
        if fresh_done:  # a fresh step asked a model; a provider reported no tokens for it
            return (
                f"tokens: 0 ({len(done)} of {len(result.steps)} steps ran; fresh steps "
                f"{', '.join(escape(k) for k in fresh_done)} reported no tokens)"
            )
        if len(done) < len(result.steps):
            return f"tokens: 0 ({len(done)} of {len(result.steps)} steps ran, all sealed code)"
        return "tokens: 0 (no planning, no code generation: every step ran sealed code)"
    where = ", ".join(f"{escape(k)} {n:,}" for k, n in sorted(spent.items()))
    sealed = sorted(set(spent) - set(fresh))
    note = f" (sealed steps that spent: {', '.join(sealed)})" if sealed else ""
    return f"tokens: {total:,}, in {where}{note}"
