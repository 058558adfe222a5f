"""Shared pieces of the ladder tests: a scripted LadderModel and small contracts."""

from collections.abc import Sequence
from typing import Any

from compiler.ladder import (
    LadderContract,
    PatchProposal,
    PatchRequest,
    ReviewRequest,
    ReviewVerdict,
)
from compiler.ladder.similarity import ngram_vector


class ScriptedModel:
    """A LadderModel that answers from queues and remembers every request it was sent."""

    def __init__(
        self,
        patches: Sequence[Any] = (),
        reviews: Sequence[Any] = (),
        vectors: dict[str, list[float]] | None = None,
    ) -> None:
        self.patches = list(patches)
        self.reviews = list(reviews)
        self.vectors = vectors
        self.patch_requests: list[PatchRequest] = []
        self.review_requests: list[ReviewRequest] = []
        self.embedded: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.append(list(texts))
        if self.vectors is not None:
            return [self.vectors[t] for t in texts]
        grams = sorted({g for t in texts for g in ngram_vector(t)})
        return [[ngram_vector(t).get(g, 0.0) for g in grams] for t in texts]

    def propose_patch(self, request: PatchRequest) -> Any:
        self.patch_requests.append(request)
        return self.patches.pop(0) if self.patches else PatchProposal(operations=[])

    def review(self, request: ReviewRequest) -> Any:
        self.review_requests.append(request)
        return self.reviews.pop(0) if self.reviews else ReviewVerdict()


TIME_ENTRY = {
    "type": "object",
    "properties": {
        "entry_id": {"type": "string", "minLength": 1},
        "client_id": {"type": "string", "minLength": 1},
        "consultant_name": {"type": "string"},
        "work_date": {"type": "string", "format": "date"},
        "hours": {"type": "number", "minimum": 0, "maximum": 24},
        "status": {"type": "string", "enum": ["draft", "approved", "billed"]},
        "billable": {"type": "boolean"},
        "description": {"type": "string"},
    },
    "required": ["entry_id", "client_id", "work_date", "hours"],
    "additionalProperties": False,
}


def contract(schema: dict[str, Any] | None = None, **fields: Any) -> LadderContract:
    return LadderContract(json_schema=schema or TIME_ENTRY, **fields)


def entry(**overrides: Any) -> dict[str, Any]:
    base = {
        "entry_id": "e-1",
        "client_id": "c-1",
        "consultant_name": "Ada Lovelace",
        "work_date": "2024-03-15",
        "hours": 7.5,
        "status": "approved",
        "billable": True,
        "description": "workshop",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def apply_patch(document: Any, patch: list[dict[str, Any]]) -> Any:
    """A tiny RFC 6902 applier (add, remove, replace, move) for checking corrections."""
    from compiler.ladder.pointer import decode, resolve

    def parent_of(pointer: str) -> tuple[Any, str]:
        tokens = decode(pointer)
        return resolve(document, tokens[:-1]), tokens[-1]

    for op in patch:
        if op["path"] == "":
            document = op["value"]
            continue
        if op["op"] == "move":
            source, key = parent_of(op["from"])
            value = source.pop(int(key) if isinstance(source, list) else key)
            parent, last = parent_of(op["path"])
            parent[last] = value
            continue
        parent, last = parent_of(op["path"])
        index: Any = int(last) if isinstance(parent, list) else last
        if op["op"] == "remove":
            del parent[index]
        else:
            parent[index] = op["value"]
    return document
