"""Moving a capsule between installations: one JSON file with its content and every blob.

`forge capsule export NAME@V -o FILE` writes a forge.capsule-export/1 document; `forge capsule
import FILE` checks all of it before writing anything: the content against its capsule_hash,
each blob against its sha256 and size, the plan against every contract and the plan hash.
Only then are the blobs stored for the importing tenant and the content added to its store,
where it is the next version of the name (or the version that already has that hash). A
refused import leaves no row and no blob behind.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from pydantic import ValidationError

from activities.store.artifacts import ArtifactStore
from activities.store.capsules import MAX_BLOB_BYTES, CapsuleStore, read_blob
from compiler.capsule.seal import SealBroken, capsule_hash, check_plan, content_blobs
from schemas.capsule import EXPORT_SCHEMA, CapsuleExport, CapsuleVersion
from schemas.compiled import CompiledPlan
from schemas.scope import Scope

__all__ = ["CapsuleImportRefused", "export_bytes", "export_capsule", "import_capsule"]

_ALTERED = (
    "the file was altered or damaged after export: do not import it; export the capsule again "
    "from the installation that made it (`forge capsule export NAME@V -o FILE`)"
)


class CapsuleImportRefused(SealBroken):
    """An export file that is not a capsule export, or does not match its own seal."""

    message_is_complete = True  # each message names the file, the problem and what to do


def export_capsule(
    store: CapsuleStore, artifacts: ArtifactStore, scope: Scope, name: str, version: int | None
) -> CapsuleExport:
    """The tenant's capsule `name` at `version` (latest when None) with every blob it names.

    Raises:
        CapsuleNotFound: The tenant has no such capsule or version.
        SealBroken: The stored content or a blob no longer matches its hash.
    """
    found = store.get(scope, name, version)
    where = f"capsule {found.ref} of tenant {scope.tenant!r}"
    blobs = {
        ref.sha256: base64.b64encode(read_blob(artifacts, scope, ref, where)).decode("ascii")
        for ref in content_blobs(found.content)
    }
    return CapsuleExport(
        name=found.name,
        version=found.version,
        capsule_hash=found.capsule_hash,
        content=found.content,
        blobs=blobs,
    )


def export_bytes(export: CapsuleExport) -> bytes:
    """The export file's bytes: JSON with sorted keys, one key per line."""
    return json.dumps(export.model_dump(mode="json"), sort_keys=True, indent=1).encode() + b"\n"


def import_capsule(
    store: CapsuleStore,
    artifacts: ArtifactStore,
    scope: Scope,
    data: bytes,
    *,
    actor: str,
    source: str,
) -> CapsuleVersion:
    """Verify an export file (`source` names it in messages), then add it for the tenant.

    Returns the version in this store: the next version of the export's name, or the version
    that already holds the same content (`created=False`).

    Raises:
        CapsuleImportRefused: The file is not JSON, not a forge.capsule-export/1 document, or
            its content, a blob or the plan does not match its seal; nothing was stored.
    """
    export = _parse(data, source)
    sealed = capsule_hash(export.content)
    if sealed != export.capsule_hash:
        raise CapsuleImportRefused(
            f"{source}: its content hashes to {sealed}, the file declares {export.capsule_hash}; "
            f"{_ALTERED}"
        )
    blobs = _decode_blobs(export, source)
    refs = content_blobs(export.content)
    for ref in refs:
        data_of = blobs.pop(ref.sha256, None)
        if data_of is None:
            raise CapsuleImportRefused(
                f"{source}: blob {ref.sha256} ({ref.path}) that the capsule names is missing; "
                f"{_ALTERED}"
            )
        if len(data_of) != ref.size_bytes:
            raise CapsuleImportRefused(
                f"{source}: blob {ref.sha256} ({ref.path}) is {len(data_of):,} bytes, the "
                f"capsule says {ref.size_bytes:,}; {_ALTERED}"
            )
        blobs[ref.sha256] = data_of
    named = {ref.sha256 for ref in refs}
    if extra := sorted(set(blobs) - named):
        raise CapsuleImportRefused(
            f"{source}: holds {len(extra)} blob(s) the capsule does not name ({extra[0]}); "
            f"{_ALTERED}"
        )
    _check_plan(export, blobs[export.content.plan_template.sha256], source)
    for ref in refs:
        stored = artifacts.put_bytes(
            scope, blobs[ref.sha256], logical_path=ref.path, media_type=ref.media_type
        )
        if stored.sha256 != ref.sha256:  # the bytes were hashed above: a store fault
            raise CapsuleImportRefused(
                f"{source}: the artifact store stored {ref.path} as {stored.sha256}, not "
                f"{ref.sha256}; check the artifact store and import again"
            )
    return store.add(scope, export.name, export.content, actor=actor)


def _parse(data: bytes, source: str) -> CapsuleExport:
    """The export document, or a refusal naming the file and what is wrong with it."""
    redo = "export the capsule again with `forge capsule export NAME@V -o FILE`"
    try:
        raw: Any = json.loads(data.decode("utf-8"))  # not json's guess at UTF-16/32
    except UnicodeDecodeError as exc:
        raise CapsuleImportRefused(
            f"{source}: not a capsule export: not UTF-8 text (byte {exc.start}); {redo}"
        ) from None
    except json.JSONDecodeError as exc:
        raise CapsuleImportRefused(
            f"{source}: not a capsule export: not JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); {redo}"
        ) from None
    if not isinstance(raw, dict):
        raise CapsuleImportRefused(
            f"{source}: not a capsule export: a JSON {type(raw).__name__}, not an object; {redo}"
        )
    schema = raw.get("schema_version")
    if schema != EXPORT_SCHEMA:
        raise CapsuleImportRefused(
            f"{source}: not a capsule export: schema_version is {schema!r}, expected "
            f"{EXPORT_SCHEMA!r}; {redo}"
        )
    try:
        return CapsuleExport.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise CapsuleImportRefused(
            f"{source}: not a valid capsule export: {exc.error_count()} problem(s), first at "
            f"{field}: {first['msg']}; {_ALTERED}"
        ) from None


def _decode_blobs(export: CapsuleExport, source: str) -> dict[str, bytes]:
    """Each blob's bytes, checked against the sha256 it is filed under."""
    blobs: dict[str, bytes] = {}
    for key, encoded in sorted(export.blobs.items()):
        if len(encoded) > (MAX_BLOB_BYTES // 3 + 1) * 4:
            raise CapsuleImportRefused(
                f"{source}: blob {key} is larger than {MAX_BLOB_BYTES:,} bytes; a capsule's "
                "blobs are never that large: do not import it"
            )
        try:
            data = base64.b64decode(encoded, validate=True)
        except binascii.Error as exc:
            raise CapsuleImportRefused(
                f"{source}: blob {key} is not valid base64 ({exc}); {_ALTERED}"
            ) from None
        actual = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if actual != key:
            raise CapsuleImportRefused(
                f"{source}: blob {key} holds bytes that hash to {actual}; {_ALTERED}"
            )
        blobs[key] = data
    return blobs


def _check_plan(export: CapsuleExport, data: bytes, source: str) -> None:
    """The plan blob is a compiled plan, and the one the content was sealed with."""
    ref = export.content.plan_template
    try:
        plan = CompiledPlan.model_validate_json(data)
    except ValidationError as exc:
        raise CapsuleImportRefused(
            f"{source}: the plan blob {ref.sha256} ({ref.path}) is not a compiled plan "
            f"(forge.compiled/1; {exc.error_count()} problem(s)); {_ALTERED}"
        ) from None
    try:
        check_plan(export.content, plan)
    except SealBroken as exc:
        raise CapsuleImportRefused(
            f"{source}: the plan does not match the capsule: {exc}; {_ALTERED}"
        ) from None
