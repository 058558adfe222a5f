"""The prompt store: every model request stored once, as canonical JSON, under its sha256."""

from __future__ import annotations

import hashlib

from pydantic import ValidationError

from activities.store.artifacts import ArtifactStore, parse_digest
from activities.store.errors import ArtifactNotFound
from compiler.hashing import canonical_json
from schemas.artifacts import ArtifactRef
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.models import ModelRequest
from schemas.scope import Scope

__all__ = ["PROMPT_MAX_BYTES", "PromptStore"]

PROMPT_MAX_BYTES = 64 * 1024 * 1024  # a request far above any model's context window
_MEDIA_TYPE = "application/json"


class PromptStore:
    """Prompts in the artifact store at `prompts/<hex>.json`; the hash is the prompt hash.

    The stored bytes are the RFC 8785 JSON of the request, so their sha256 is exactly
    `activities.models.script.prompt_hash(request)`: the hash on a model.called.v1 event
    names the artifact holding the prompt.
    """

    def __init__(self, artifacts: ArtifactStore) -> None:
        self._artifacts = artifacts

    def put(self, scope: Scope, request: ModelRequest) -> tuple[str, ArtifactRef]:
        """Store `request` for the scope's tenant unless it is stored; its hash and reference."""
        data = canonical_json(request.model_dump(mode="json"))
        hex_digest = hashlib.sha256(data).hexdigest()
        digest = f"sha256:{hex_digest}"
        path = f"prompts/{hex_digest}.json"
        if self._artifacts.exists(scope, digest):
            ref = ArtifactRef(
                artifact_id=digest,
                path=path,
                sha256=digest,
                size_bytes=len(data),
                media_type=_MEDIA_TYPE,
            )
        else:
            ref = self._artifacts.put_bytes(scope, data, logical_path=path, media_type=_MEDIA_TYPE)
        return digest, ref

    def get(self, scope: Scope, prompt_hash: str) -> ModelRequest:
        """The request the scope's tenant stored under `prompt_hash`.

        Raises:
            ForgeError: PROMPT_NOT_FOUND, the tenant stored nothing under it, or the bytes are
                not a request.
            ValueError: `prompt_hash` is not a sha256 digest.
        """
        parse_digest(prompt_hash)
        try:
            data = self._artifacts.read_bytes(scope, prompt_hash, PROMPT_MAX_BYTES)
        except ArtifactNotFound:
            raise ForgeError(
                f"no prompt of tenant {scope.tenant!r} is stored under {prompt_hash}: prompts "
                "are stored by the model gateway when it makes a call; check the hash, the "
                "tenant and the artifact store (FORGE_ARTIFACTS_URL) it was recorded in",
                code=ErrorCode.PROMPT_NOT_FOUND,
            ) from None
        try:
            return ModelRequest.model_validate_json(data)
        except ValidationError as exc:
            raise ForgeError(
                f"the artifact {prompt_hash} is not a stored model request: {exc.errors()[0]}",
                code=ErrorCode.PROMPT_NOT_FOUND,
            ) from None
