"""Which allowed tools the executor's context surfaces for a step, computed once per context.

The context compile is pure (compiler/context), so its answer for one pack and one run
context never changes; the steps of a run mostly share their run context, and compiling the
executor pack for each of them cost more than a no-op step's own work.
"""

import threading
from collections import OrderedDict

from compiler.context import compile_context
from schemas.context import ContextPack, InvokeRequest, RunContext

_KEPT = 256
_REQUEST = InvokeRequest(intent_id="forge.execute", message="tool surfacing")


class _Surfaced:
    """A bounded memo of the pure context compile's surfaced tools."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (id of the pack, the run context's JSON) -> (the pack itself, its surfaced tool ids);
        # the pack is kept so that its id cannot be reused by another pack while remembered.
        self._memo: OrderedDict[tuple[int, str], tuple[ContextPack, frozenset[str]]] = OrderedDict()

    def __call__(self, pack: ContextPack, run_context: RunContext) -> set[str]:
        key = (id(pack), run_context.model_dump_json())
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None and hit[0] is pack:
                self._memo.move_to_end(key)
                return set(hit[1])
        context = compile_context(pack, run_context, _REQUEST)
        tools = frozenset(t.tool_id for t in context.surfaced_tools)
        with self._lock:
            self._memo[key] = (pack, tools)
            while len(self._memo) > _KEPT:
                self._memo.popitem(last=False)
        return set(tools)


surfaced_tool_ids = _Surfaced()
