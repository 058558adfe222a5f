"""The context pack compiler (seed 002): eight pure stages and the orchestrator that runs them."""

from compiler.context.compile import compile_context
from compiler.context.errors import ContextError
from compiler.context.evidence import EvidenceRetriever
from compiler.context.memory import MemoryRecaller
from compiler.context.packs import parse_pack

__all__ = [
    "ContextError",
    "EvidenceRetriever",
    "MemoryRecaller",
    "compile_context",
    "parse_pack",
]
