"""A run's inputs over HTTP: uploads the tenant stored, or S3 objects it may read.

An input names content, never a place on the server: `sha256:<hex>` of an upload in the tenant's
artifact store (`POST /v1/uploads`), optionally with the file name it should carry, or
`s3://BUCKET/KEY` in a bucket Forge reads inputs from. Uploads are materialized as files in a fresh
temporary directory and handed to the same submission code the CLI uses (workers/services/runs.py,
activities/capsules/prepare_run.py); `file://` and paths are refused before anything.
"""

import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from activities.capsules.prepare_run import InputPolicy, local_copy
from activities.store.artifacts import ArtifactStore
from schemas.api import InputRef, ParamValue, UploadRef
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope

__all__ = ["located", "materialized", "param_strings"]

_SHA = re.compile(r"sha256:[0-9a-f]{64}")


def param_strings(given: Mapping[str, ParamValue]) -> dict[str, str]:
    """Typed JSON values as the parameter strings the CLI would have passed."""
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in given.items()}


def _invalid(name: str, message: str) -> ForgeError:
    return ForgeError(
        f"inputs.{name}: {message}",
        code=ErrorCode.REQUEST_INVALID,
        hint="name an upload as sha256:<hex> (POST /v1/uploads) or an object as s3://BUCKET/KEY",
    )


def _upload(ref: InputRef) -> UploadRef | None:
    if isinstance(ref, UploadRef):
        return ref
    return UploadRef(sha256=ref) if _SHA.fullmatch(ref) else None


def _fetch(name: str, upload: UploadRef, artifacts: ArtifactStore, scope: Scope, tmp: Path) -> Path:
    """The upload as a file under `tmp`, if it is the scope's tenant's."""
    if not artifacts.exists(scope, upload.sha256):
        raise _invalid(name, f"no upload {upload.sha256} in this tenant")
    dest = tmp / name / (upload.filename or name)
    dest.parent.mkdir(parents=True)
    artifacts.get_to_file(scope, upload.sha256, dest, durable=False)
    return dest


def _refused(name: str) -> ForgeError:
    return _invalid(
        name,
        "the API reads no paths or file:// URLs on the server; give an upload's sha256 or an "
        "s3:// object",
    )


def located(
    inputs: Mapping[str, InputRef], artifacts: ArtifactStore, scope: Scope, tmp: Path
) -> dict[str, str]:
    """Each input as a capsule run names it, or a clear refusal.

    An upload is fetched under `tmp` (the capsule run's only input root); an S3 URI is given
    as it is (the run's policy judges its bucket); anything else is refused.
    """
    given: dict[str, str] = {}
    for name, ref in sorted(inputs.items()):
        upload = _upload(ref)
        if upload is not None:
            given[name] = str(_fetch(name, upload, artifacts, scope, tmp))
        elif isinstance(ref, str) and ref.startswith("s3://"):
            given[name] = ref
        else:
            raise _refused(name)
    return given


@contextmanager
def materialized(
    inputs: Mapping[str, InputRef],
    artifacts: ArtifactStore,
    scope: Scope,
    policy: InputPolicy,
) -> Iterator[dict[str, Path]]:
    """Each input as a local file (in a directory removed on exit), or a clear refusal.

    An upload must be the scope's tenant's; an S3 object must be in one of the policy's
    buckets; anything else (a path, `file://`, another scheme) is refused.
    """
    with tempfile.TemporaryDirectory(prefix="forge-api-inputs-") as tmp, ExitStack() as stack:
        files: dict[str, Path] = {}
        for name, ref in sorted(inputs.items()):
            upload = _upload(ref)
            if upload is not None:
                files[name] = _fetch(name, upload, artifacts, scope, Path(tmp))
            elif isinstance(ref, str) and ref.startswith("s3://"):
                files[name] = stack.enter_context(local_copy(name, ref, policy))
            else:
                raise _refused(name)
        yield files
