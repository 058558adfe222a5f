"""What the eight stages share: the draft they pass on, the retrievers the caller injects.

A stage is `(draft, *, retrievers) -> draft` (CONVENTIONS rule 4): it reads the inputs and what
earlier stages filled in the ContextDraft (schemas/context.py), and returns a new draft with its
own output filled in. It never changes the draft it was given. compile.py holds their order.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from schemas.context import ContextDraft, EvidenceQuery, EvidenceRef, MemoryQuery, PromotedMemory

EvidenceRetriever = Callable[[EvidenceQuery], Sequence[EvidenceRef]]
MemoryRecaller = Callable[[MemoryQuery], Sequence[PromotedMemory]]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Retrievers:
    """Where evidence and memory come from: the caller's (an activity, the replay, a test).

    The compiler never fetches either itself, so a compile stays pure and replays against
    recorded evidence. None: nothing to retrieve.
    """

    evidence: EvidenceRetriever | None = None
    memory: MemoryRecaller | None = None


NO_RETRIEVERS = Retrievers()


class Stage(Protocol):
    """One of the eight stages: the draft with this stage's output filled in."""

    __name__: str

    def __call__(self, draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft: ...


def filled(value: _T | None, stage: str) -> _T:
    """An earlier stage's output, read from the draft; the stages run in compile.py's order."""
    if value is None:
        raise ValueError(
            f"the {stage} stage has not run on this draft: run the stages in the order of "
            "compiler/context/compile.py STAGE_ORDER (compile_context does)"
        )
    return value
