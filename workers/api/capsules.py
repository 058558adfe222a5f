"""`/v1/capsules`: every `forge capsule` verb for other services, and the headless capsule run.

`POST /v1/capsules/{name}/versions/{version}/runs` is seed 000 §8.5's headless execution: the sealed
plan runs on new inputs with the given parameters, no planning. The code is the CLI's:
workers/services/capsules.py (extract), activities/capsules/prepare_run.py (a run), the capsule
bundle (export, import), compiler/capsule/diff.py (diff).
"""

import asyncio
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from activities.capsules.prepare_run import CapsuleRun, prepare_capsule_run
from activities.store.capsule_bundle import export_bytes, export_capsule
from schemas.api import RunAccepted
from schemas.api_capsules import CapsuleExtract, CapsuleList, CapsuleRunRequest, CapsuleSummary
from schemas.bounds import Version
from schemas.capsule import CapsuleDiff, CapsuleVersion
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.api.auth import Ctx, requires
from workers.api.context import ApiContext
from workers.api.idempotency import IdempotencyKey, once
from workers.api.inputs import located, param_strings
from workers.api.problems import problem_responses
from workers.api.runs import tenant_run
from workers.services import quotas, runs
from workers.services.access import Principal
from workers.services.capsule_runs import input_policy
from workers.services.capsules import (
    MAX_EXPORT_BYTES,
    CapsuleServices,
    diff_versions,
    extract_run,
    import_version,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["capsules"])


def summary(v: CapsuleVersion) -> CapsuleSummary:
    c = v.content
    return CapsuleSummary(
        name=v.name,
        version=v.version,
        capsule_hash=v.capsule_hash,
        created_at=v.created_at,
        created_by=v.created_by,
        source_run_id=c.provenance.source_run_id,
        steps=len(c.programs),
        inputs=[i.name for i in c.inputs],
        params={s.name: s.type for s in c.scalars},
        created=v.created,
    )


def _answer(version: CapsuleVersion) -> JSONResponse:
    """201 for a version this request added, 200 for one the tenant already had."""
    return JSONResponse(
        summary(version).model_dump(mode="json"), status_code=201 if version.created else 200
    )


def _get(ctx: ApiContext, who: Principal, name: str, version: int | None) -> CapsuleVersion:
    return ctx.services.capsules.get(who.scope(), name, version)


@router.get("/capsules", response_model=CapsuleList, responses=problem_responses(401, 403))
async def list_capsules(
    ctx: Ctx, who: Annotated[Principal, Depends(requires("capsules.read"))]
) -> CapsuleList:
    """The tenant's capsules, newest version of each."""
    found = await asyncio.to_thread(ctx.services.capsules.list, who.scope())
    return CapsuleList(capsules=[summary(v) for v in found])


@router.post(
    "/capsules",
    status_code=201,
    response_model=CapsuleSummary,
    responses=problem_responses(401, 403, 404, 422),
    summary="Extract a completed run into a capsule version",
)
async def extract_capsule(
    body: CapsuleExtract, ctx: Ctx, who: Annotated[Principal, Depends(requires("capsules.write"))]
) -> JSONResponse:
    await tenant_run(ctx, who, body.run_id)  # another tenant's run is as absent as none

    def extract() -> CapsuleVersion:
        s = ctx.services
        services = CapsuleServices(
            events=s.events,
            artifacts=s.artifacts,
            capsules=s.capsules,
            library=ctx.compile_context().library,
        )
        return extract_run(
            services, who.scope(), body.run_id, body.name,
            structural=body.structural, params=body.params,
        )  # fmt: skip

    return _answer(await asyncio.to_thread(extract))


@router.get(
    "/capsules/{name}/versions",
    response_model=CapsuleList,
    responses=problem_responses(401, 403, 404),
)
async def capsule_versions(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("capsules.read"))]
) -> CapsuleList:
    """Every version of a capsule, oldest first."""
    found = await asyncio.to_thread(ctx.services.capsules.versions, who.scope(), name)
    return CapsuleList(capsules=[summary(v) for v in found])


@router.get(
    "/capsules/{name}/versions/{version}",
    response_model=CapsuleVersion,
    responses=problem_responses(401, 403, 404),
)
async def show_capsule(
    name: str,
    version: Version,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("capsules.read"))],
) -> CapsuleVersion:
    """One version: goal, parameters, steps and what each runs, governance, provenance."""
    return await asyncio.to_thread(_get, ctx, who, name, version)


@router.get(
    "/capsules/{name}/diff",
    response_model=CapsuleDiff,
    responses=problem_responses(401, 403, 404, 422),
)
async def diff_capsule(
    name: str,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("capsules.read"))],
    a: Annotated[Version, Query(alias="from")],
    b: Annotated[Version, Query(alias="to")],
) -> CapsuleDiff:
    """What changed between two versions: steps, contracts, code, parameters, governance."""

    def diff() -> CapsuleDiff:
        first, second = _get(ctx, who, name, a), _get(ctx, who, name, b)
        return diff_versions(ctx.services.artifacts, who.scope(), first, second)

    return await asyncio.to_thread(diff)


@router.get(
    "/capsules/{name}/versions/{version}/export",
    response_class=Response,
    responses={
        200: {"description": "forge.capsule-export/1 JSON", "content": {"application/json": {}}},
        **problem_responses(401, 403, 404),
    },
)
async def export_capsule_version(
    name: str,
    version: Version,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("capsules.write"))],
) -> Response:
    """A version and every blob it names, to import in another installation."""
    s = ctx.services

    def export() -> bytes:
        return export_bytes(export_capsule(s.capsules, s.artifacts, who.scope(), name, version))

    data = await asyncio.to_thread(export)
    return Response(
        data,
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}@{version}.json"'},
    )


@router.post(
    "/capsules/import",
    status_code=201,
    response_model=CapsuleSummary,
    responses=problem_responses(401, 403, 413, 422),
)
async def import_capsule_version(
    file: UploadFile, ctx: Ctx, who: Annotated[Principal, Depends(requires("capsules.write"))]
) -> JSONResponse:
    """Import an exported capsule (multipart field `file`): every hash is verified first."""
    data = await file.read(MAX_EXPORT_BYTES + 1)
    if len(data) > MAX_EXPORT_BYTES:
        raise ForgeError(
            f"the file is larger than {MAX_EXPORT_BYTES:,} bytes; not a capsule export",
            code=ErrorCode.ARTIFACT_TOO_LARGE,
        )
    s, scope = ctx.services, who.scope()

    version = await asyncio.to_thread(
        import_version, s.capsules, s.artifacts, s.events, scope, data,
        source=file.filename or "upload",
    )  # fmt: skip
    return _answer(version)


@router.post(
    "/capsules/{name}/versions/{version}/runs",
    status_code=201,
    response_model=RunAccepted,
    responses=problem_responses(401, 403, 404, 409, 422, 429),
    summary="Run a capsule version on new inputs (headless: no planning)",
)
async def run_capsule(
    name: str,
    version: Version,
    body: CapsuleRunRequest,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("capsules.run"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    s = ctx.settings

    def prepare() -> CapsuleRun:
        with tempfile.TemporaryDirectory(prefix="forge-api-capsule-") as tmp:
            given = located(body.inputs, ctx.services.artifacts, who.scope(), Path(tmp))
            own = input_policy(s, ctx.services.tenant_settings.get(who.tenant), local=False)
            policy = replace(own, roots=(Path(tmp),))  # the request's uploads, fetched here
            return prepare_capsule_run(
                ctx.services.capsules,
                ctx.services.artifacts,
                policy,
                who.scope(),
                f"{name}@{version}",
                run_id=runs.new_run_id(who.tenant),
                inputs=given,
                params=param_strings(body.params),
                fresh=body.fresh,
            )  # fmt: skip

    async def act() -> tuple[int, RunAccepted]:
        await quotas.precheck(ctx.client, ctx.services.admissions, who.tenant)  # before copies
        prepared = await asyncio.to_thread(prepare)
        await runs.start_run(ctx.client, s, prepared.run, ctx.services.admissions)
        steps = len(prepared.version.content.programs)
        return 201, RunAccepted(run_id=prepared.run.run_id, steps=steps)

    return await once(ctx, who, request, idempotency_key, body, act)
