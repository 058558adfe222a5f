"""`compile_context`: the eight stages of seed 002 in their one order (the 20-line orchestrator).

Pure: evidence and memory come from retrievers the caller injects; everything else from the
pack, the run context and the request. Same inputs, byte-identical CompiledContext.
"""

from compiler.context.buckets import assemble_buckets
from compiler.context.budget import allocate_budget
from compiler.context.evidence import EvidenceRetriever, retrieve_evidence
from compiler.context.intent import classify_intent
from compiler.context.manifests import emit_manifests
from compiler.context.memory import MemoryRecaller, recall_memory
from compiler.context.policy import resolve_policy
from compiler.context.tools import surface_tools
from schemas.context import CompiledContext, ContextPack, InvokeRequest, RunContext


def compile_context(
    pack: ContextPack,
    ctx: RunContext,
    req: InvokeRequest,
    *,
    evidence: EvidenceRetriever | None = None,
    memory: MemoryRecaller | None = None,
) -> CompiledContext:
    """Compile one model call's context; raises ContextError when it must refuse."""
    intent = classify_intent(pack, ctx, req)
    policy = resolve_policy(pack, ctx, req, intent)
    tools = surface_tools(pack, ctx, policy)
    refs = retrieve_evidence(pack, ctx, req, intent, evidence)
    recalls = recall_memory(pack, ctx, intent, memory)
    budget = allocate_budget(pack, ctx, intent)
    buckets = assemble_buckets(pack, req, policy, tools, refs, recalls, budget)
    return emit_manifests(pack, ctx, intent, policy, tools, refs, recalls, budget, buckets)
