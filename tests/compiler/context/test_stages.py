"""The stages take the draft and return a new one (CONVENTIONS rule 4), in STAGE_ORDER only."""

import pytest

from compiler.context.compile import STAGE_ORDER
from compiler.context.draft import Retrievers
from compiler.context.manifests import emit_manifests
from compiler.context.tools import surface_tools
from schemas.context import STAGES, ContextDraft
from tests.compiler.context.build import draft, memory, pack, ref, request, run_ctx

# The draft field each stage fills, in the order of the stage hashes (schemas.context.STAGES).
FIELDS = {**{s: s for s in STAGES}, "manifests": "compiled"}


def test_each_stage_fills_its_own_field_and_leaves_its_input_as_it_was():
    retrievers = Retrievers(evidence=lambda q: [ref(1)], memory=lambda q: [memory(1)])
    d = draft(pack(), run_ctx(), request())
    assert len(STAGE_ORDER) == len(STAGES)
    for stage, name in zip(STAGE_ORDER, STAGES, strict=True):
        before = d.model_dump()
        after = stage(d, retrievers=retrievers)
        assert isinstance(after, ContextDraft) and after is not d
        assert d.model_dump() == before  # the input draft is unchanged
        changed = {f for f in ContextDraft.model_fields if getattr(after, f) != getattr(d, f)}
        assert changed == {FIELDS[name]}, stage.__name__
        d = after
    assert d.compiled is not None


@pytest.mark.parametrize(
    ("stage", "missing"), [(surface_tools, "policy"), (emit_manifests, "intent")]
)
def test_a_stage_run_before_the_ones_it_reads_says_which(stage, missing):
    with pytest.raises(ValueError, match=f"the {missing} stage has not run on this draft"):
        stage(draft(pack(), run_ctx(), request()), retrievers=Retrievers())
