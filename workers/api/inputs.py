"""A run's inputs over HTTP: uploads the tenant stored, or S3 objects it may read.

An input names content, never a place on the server: `sha256:<hex>` of an upload in the
tenant's artifact store (`POST /v1/uploads`), optionally with the file name it should carry,
or `s3://BUCKET/KEY` in a bucket Forge reads inputs from. Each is materialized as a file in a
fresh temporary directory and handed to the same submission code the CLI uses
(workers/runs.py, workers/capsule_runs.py); `file://` and paths are refused before anything.
"""

import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import Field

from activities.capsule_runs import InputPolicy, local_copy
from activities.store.artifacts import ArtifactStore
from schemas.base import FrozenModel
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope

__all__ = ["InputRef", "UploadRef", "materialized"]

_SHA = re.compile(r"sha256:[0-9a-f]{64}")
_FILENAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"


class UploadRef(FrozenModel):
    """An upload named by its sha256, with the file name it should have in the run."""

    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    filename: str | None = Field(default=None, pattern=_FILENAME)


InputRef = str | UploadRef


def _invalid(name: str, message: str) -> ForgeError:
    return ForgeError(
        f"inputs.{name}: {message}",
        code=ErrorCode.REQUEST_INVALID,
        hint="name an upload as sha256:<hex> (POST /v1/uploads) or an object as s3://BUCKET/KEY",
    )


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
            upload = ref if isinstance(ref, UploadRef) else None
            if isinstance(ref, str) and _SHA.fullmatch(ref):
                upload = UploadRef(sha256=ref)
            if upload is not None:
                if not artifacts.exists(scope, upload.sha256):
                    raise _invalid(name, f"no upload {upload.sha256} in this tenant")
                dest = Path(tmp) / name / (upload.filename or name)
                dest.parent.mkdir(parents=True)
                artifacts.get_to_file(scope, upload.sha256, dest, durable=False)
                files[name] = dest
            elif isinstance(ref, str) and ref.startswith("s3://"):
                files[name] = stack.enter_context(local_copy(name, ref, policy))
            else:
                raise _invalid(
                    name,
                    "the API reads no paths or file:// URLs on the server; give an upload's "
                    "sha256 or an s3:// object",
                )
        yield files
