"""The executor pack's surfaced tools are compiled once per (pack, run context), and stay exact."""

from activities.harness import surfacing
from activities.models.context_packs import load_context_packs
from compiler.context import compile_context
from schemas.context import InvokeRequest, RunContext


def context(run_id: str, **facts: object) -> RunContext:
    return RunContext(
        tenant_id="t",
        project_id="p",
        run_id=run_id,
        safety_mode="confirm",
        snapshot_id="sha256:" + "0" * 64,
        facts={"backend": "sandbox.frozen", "step_kind": "code", **facts},
    )


def test_the_same_context_is_compiled_once_and_answers_what_the_compile_says(monkeypatch):
    pack = load_context_packs()["executor"]
    calls: list[RunContext] = []
    real = surfacing.compile_context

    def counting(p, rc, req):
        calls.append(rc)
        return real(p, rc, req)

    monkeypatch.setattr(surfacing, "compile_context", counting)
    memo = surfacing._Surfaced()
    first = memo(pack, context("run-1"))
    request = InvokeRequest(intent_id="forge.execute", message="tool surfacing")
    expected = {t.tool_id for t in compile_context(pack, context("run-1"), request).surfaced_tools}
    assert first == expected
    first.add("mutating.the.answer")  # a caller's copy; the memo is not touched
    assert memo(pack, context("run-1")) == expected
    assert len(calls) == 1
    memo(pack, context("run-1", network=True))  # another context: compiled again
    memo(pack, context("run-2"))
    assert len(calls) == 3
    other = pack.model_copy(deep=True)  # an equal pack object is still another pack
    memo(other, context("run-1"))
    assert len(calls) == 4
