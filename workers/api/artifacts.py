"""Uploads in, artifacts and receipts out: bytes move by content address, never by path.

An upload is streamed to a temporary file with a size limit, then stored in the tenant's
artifact store; its sha256 names it as an input. A download names a path the run published:
it is looked up in the publish index (a path nobody published, `..` included, is simply not
found), and the bytes come from the tenant's store with their sha256 in the headers.
"""

import asyncio
import base64
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from activities import masked_output
from activities.harness.receipts_masking import mask_receipt
from schemas.api import ArtifactItem, ArtifactList, Upload
from schemas.bounds import Version
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import STEP_RECEIPT_POSTFLIGHT, STEP_RECEIPT_PREFLIGHT
from schemas.event_ids import stream_id
from schemas.receipts import Receipt
from workers.api.auth import Ctx, requires
from workers.api.problems import problem_responses
from workers.api.runs import tenant_run
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["artifacts"])
_CHUNK = 1024 * 1024
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def _too_large(limit: int) -> ForgeError:
    return ForgeError(
        f"the upload is larger than {limit:,} bytes; nothing was stored",
        code=ErrorCode.ARTIFACT_TOO_LARGE,
        hint="split the file, or put it in an S3 bucket Forge reads and name it as s3://…",
    )


@router.post(
    "/uploads",
    status_code=201,
    response_model=Upload,
    responses=problem_responses(401, 403, 413, 422),
    summary="Store a file in the tenant's artifact store (multipart field `file`)",
)
async def upload(
    file: UploadFile,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.start"))],
) -> Upload:
    limit = ctx.settings.api_max_upload_bytes
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise _too_large(limit)
    name = file.filename or "upload"
    if not _FILENAME.fullmatch(name):
        # Refused, not rewritten: a run would see another name than the one sent (issue 35 §3).
        raise RequestValidationError(
            [
                {
                    "loc": ("body", "file", "filename"),
                    "type": "value_error",
                    "msg": "a file name is 1-100 ASCII letters, digits, '_', '.' or '-', "
                    "starting with a letter or digit, and no path; rename the file and upload "
                    "it again",
                }
            ]
        )
    with tempfile.TemporaryDirectory(prefix="forge-api-upload-") as tmp:
        dest = Path(tmp) / name
        size = 0
        with dest.open("wb") as out:
            while chunk := await file.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                out.write(chunk)
        ref = await asyncio.to_thread(
            ctx.services.artifacts.put_file,
            who.scope(),
            dest,
            logical_path=f"uploads/{name}",
        )
    return Upload(
        sha256=ref.sha256, size_bytes=ref.size_bytes, filename=name, media_type=file.content_type
    )


@router.get(
    "/runs/{run_id}/artifacts",
    response_model=ArtifactList,
    responses=problem_responses(401, 403, 404),
    summary="What a run published",
)
async def list_artifacts(
    run_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("runs.read"))]
) -> ArtifactList:
    await tenant_run(ctx, who, run_id)
    published = await asyncio.to_thread(
        ctx.services.events.list_published, run_id, tenant_id=who.tenant
    )
    return ArtifactList(
        artifacts=[
            ArtifactItem(
                path=p.path,
                version=p.version,
                sha256=p.sha256,
                size_bytes=p.size_bytes,
                media_type=p.media_type,
                step_key=p.step_key,
                contract_hash=p.contract_hash,
                published_at=p.published_at,
            )
            for p in published
        ]
    )


@router.get(
    "/runs/{run_id}/artifacts/{path:path}",
    response_class=FileResponse,
    responses={
        200: {
            "description": "The artifact's bytes; X-Forge-SHA256 and Repr-Digest carry its hash",
            "content": {"application/octet-stream": {}},
        },
        **problem_responses(401, 403, 404),
    },
    summary="Download a published artifact (the latest version, or ?version=N)",
)
async def download(
    run_id: str,
    path: str,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.read"))],
    version: Annotated[Version | None, Query()] = None,
) -> FileResponse:
    await tenant_run(ctx, who, run_id)
    events = ctx.services.events
    if version is None:
        found = await asyncio.to_thread(events.latest, run_id, path, tenant_id=who.tenant)
    else:
        every = await asyncio.to_thread(events.list_published, run_id, tenant_id=who.tenant)
        found = next((p for p in every if p.path == path and p.version == version), None)
    if found is None:
        raise ForgeError(
            f"run {run_id} published nothing at {path!r}"
            + (f" in version {version}" if version else ""),
            code=ErrorCode.NOT_FOUND,
            hint=f"list what it published with GET /v1/runs/{run_id}/artifacts",
        )
    tmp = tempfile.mkdtemp(prefix="forge-api-download-")
    dest = Path(tmp) / "artifact"
    await asyncio.to_thread(
        ctx.services.artifacts.get_to_file, who.scope(), found.sha256, dest, durable=False
    )
    digest = bytes.fromhex(found.sha256.removeprefix("sha256:"))
    return FileResponse(
        dest,
        media_type=found.media_type or "application/octet-stream",
        filename=Path(found.path).name,
        headers={
            "X-Forge-SHA256": found.sha256,
            "Repr-Digest": f"sha-256=:{base64.b64encode(digest).decode()}:",
            "ETag": f'"{found.sha256}"',
        },
        background=BackgroundTask(_remove, Path(tmp)),
    )


def _remove(directory: Path) -> None:
    for child in directory.iterdir():
        child.unlink(missing_ok=True)
    directory.rmdir()


@router.get(
    "/runs/{run_id}/steps/{step_key}/receipts",
    response_model=list[Receipt],
    responses=problem_responses(401, 403, 404),
    summary="A step's preflight and postflight receipts",
)
async def receipts(
    run_id: str,
    step_key: str,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.read"))],
) -> list[Any]:
    await tenant_run(ctx, who, run_id)
    found = [
        e
        for e in await asyncio.to_thread(
            ctx.services.events.read_stream,
            stream_id(run_id, "step", step_key),
            tenant_id=who.tenant,
        )
        if e.type in (STEP_RECEIPT_PREFLIGHT, STEP_RECEIPT_POSTFLIGHT)
    ]
    if not found:
        raise ForgeError(
            f"no receipts for step {step_key!r} of run {run_id!r}", code=ErrorCode.NOT_FOUND
        )
    store = ctx.services.artifacts
    shown = []
    for e in found:
        stored = Receipt.model_validate_json(
            await asyncio.to_thread(
                store.read_bytes, who.scope(), e.payload["receipt_ref"]["sha256"], 16 * 1024 * 1024
            )
        )
        # Receipts are masked when stored; one stored before that is masked on its way out.
        receipt, masked = mask_receipt(stored)
        masked_output.note("api", f"GET /runs/{run_id}/steps/{step_key}/receipts", masked)
        shown.append(receipt)
    return shown
