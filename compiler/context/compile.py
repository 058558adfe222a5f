"""`compile_context`: the eight stages of seed 002 in their one order (STAGE_ORDER).

Each stage takes the ContextDraft and returns a new one with its own output filled in
(compiler/context/draft.py). Pure: evidence and memory come from retrievers the caller injects;
everything else from the pack, the run context and the request. Same inputs, byte-identical
CompiledContext.
"""

from compiler.context.buckets import assemble_buckets
from compiler.context.budget import allocate_budget
from compiler.context.draft import EvidenceRetriever, MemoryRecaller, Retrievers, Stage, filled
from compiler.context.evidence import retrieve_evidence
from compiler.context.intent import classify_intent
from compiler.context.manifests import emit_manifests
from compiler.context.memory import recall_memory
from compiler.context.policy import resolve_policy
from compiler.context.tools import surface_tools
from schemas.context import CompiledContext, ContextDraft, ContextPack, InvokeRequest, RunContext

# The only order (schemas.context.STAGES names them): each stage reads what those before it filled.
STAGE_ORDER: tuple[Stage, ...] = (
    classify_intent,
    resolve_policy,
    surface_tools,
    retrieve_evidence,
    recall_memory,
    allocate_budget,
    assemble_buckets,
    emit_manifests,
)


def compile_context(
    pack: ContextPack,
    ctx: RunContext,
    req: InvokeRequest,
    *,
    evidence: EvidenceRetriever | None = None,
    memory: MemoryRecaller | None = None,
) -> CompiledContext:
    """Compile one model call's context; raises ContextError when it must refuse."""
    retrievers = Retrievers(evidence=evidence, memory=memory)
    draft = ContextDraft(pack=pack, run_context=ctx, request=req)
    for stage in STAGE_ORDER:
        draft = stage(draft, retrievers=retrievers)
    return filled(draft.compiled, "manifests")
