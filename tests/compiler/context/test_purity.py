"""compiler/context is pure: no I/O, clock, randomness or network, and it never mutates input."""

from pathlib import Path

from compiler.context import compile_context
from tests.compiler.context.build import memory, pack, ref, request, run_ctx
from tests.test_layers import IMPURE, ROOT, _imports

CONTEXT = ROOT / "compiler" / "context"
ALLOWED = {
    "compiler",
    "schemas",
    "json_logic",
    "pydantic",
    "collections",
    "dataclasses",
    "fractions",
    "functools",
    "hashlib",
    "json",
    "re",
    "typing",
}


def test_context_modules_import_only_pure_modules():
    modules = sorted(CONTEXT.glob("*.py"))
    assert {m.name for m in modules} >= {
        f"{n}.py"
        for n in (
            "intent",
            "policy",
            "tools",
            "evidence",
            "memory",
            "budget",
            "buckets",
            "manifests",
            "tokens",
            "compile",
            "packs",
        )
    }
    for path in modules:
        found = _imports(path)
        assert not found & IMPURE, f"{path.relative_to(ROOT)} imports {sorted(found & IMPURE)}"
        assert found <= ALLOWED, f"{Path(path).name} imports {sorted(found - ALLOWED)}"


def test_orchestrator_stays_short():
    body = (CONTEXT / "compile.py").read_text().split("def compile_context", 1)[1]
    assert len(body.strip().splitlines()) <= 20


def test_retrievers_are_called_once_and_inputs_are_unchanged():
    p, c, r = pack(), run_ctx(), request()
    refs, recalls = [ref(1), ref(2)], [memory(1)]
    calls = []

    def evidence(q):
        calls.append("evidence")
        return refs

    def recall(q):
        calls.append("memory")
        return recalls

    before = [x.model_dump_json() for x in (p, c, r, *refs, *recalls)]
    compile_context(p, c, r, evidence=evidence, memory=recall)
    assert calls == ["evidence", "memory"]
    assert [x.model_dump_json() for x in (p, c, r, *refs, *recalls)] == before
