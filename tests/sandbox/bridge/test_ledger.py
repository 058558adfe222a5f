"""What the bridge records: called events, persisted proofs, failed calls, replay on retry."""

from typing import Any

from activities.sandbox.bridge import BridgeCall, ToolError
from activities.sandbox.bridge_ledger import INLINE_RESULT_BYTES
from compiler.budget import usage_from_events
from tests.sandbox.bridge.support import (
    PROOF,
    STARTED,
    Counting,
    evaluate_handler,
    events_of,
    policy,
    run_step,
    step_result,
)
from tests.support.sandbox import needs_bwrap


@needs_bwrap
def test_log_note_is_a_recorded_bridge_call(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("log.note", {"text": "read 120 rows", "level": "info"}))
        emit(call("log.note", {"text": "x" * 5000}))
        """,
    )
    (first,), (second,) = out
    assert first[0] == "ok" and first[1]["truncated"] is False
    assert second[0] == "ok" and second[1]["truncated"] is True
    notes = events_of(store, "log.noted.v1")
    assert [n.payload["text"] for n in notes] == ["read 120 rows", "x" * 4096]
    assert notes[0].event_id == first[1]["event_id"]
    assert notes[0].payload["call_index"] == 0 and notes[0].caused_by == STARTED
    called = events_of(store, "tool.called.v1")
    assert [(c.payload["tool"], c.payload["channel"], c.payload["ok"]) for c in called] == [
        ("log.note", "bridge", True)
    ] * 2
    assert all(
        c.caused_by == STARTED and c.payload["call_key"].startswith("sha256:") for c in called
    )
    assert usage_from_events(events_of(store), attempt=1).bridge_calls == 2


@needs_bwrap
def test_the_same_call_in_a_retried_attempt_is_answered_without_running_it_again(
    tmp_path, store, artifacts
):
    evaluate = Counting(evaluate_handler)
    big = Counting(lambda args, call: {"blob": "y" * (INLINE_RESULT_BYTES * 3)})
    code = """
        emit(call("artifact.evaluate", {"path": "output/report.md"}))
        emit(call("artifact.evaluate", {"path": "output/report.md"}, key="second look"))
        emit(call("log.note", {"text": "big"}))
    """
    handlers = {"artifact.evaluate": evaluate, "log.note": big}
    _, first = run_step(tmp_path, store, artifacts, code, handlers=handlers)
    assert len(evaluate.calls) == 2  # a distinct client key is a distinct call
    _, second = run_step(
        tmp_path, store, artifacts, code, handlers=handlers, bridge_policy=policy(attempt=2)
    )
    assert second == first
    assert len(evaluate.calls) == 2 and len(big.calls) == 1
    called = events_of(store, "tool.called.v1")
    assert len(called) == 3 and {c.payload["attempt"] for c in called} == {1}
    assert "result_ref" in called[2].payload["detail"]  # too large for the event: an artifact
    assert len(events_of(store, "tool.replayed.v1")) == 3
    replay = events_of(store, "tool.replayed.v1")[0]
    assert replay.payload["original_event_id"] == called[0].event_id


@needs_bwrap
def test_an_evaluator_proof_is_persisted_with_the_call(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        'emit(call("artifact.evaluate", {"path": "output/report.md"}))',
    )
    [[(status, proof)]] = out
    assert status == "ok" and proof["model_call_id"] == "model-call-7"
    [called] = events_of(store, "tool.called.v1")
    recorded = called.payload["detail"]["result"]
    assert recorded["bundle_sha256"] == PROOF["bundle_sha256"] and recorded["verdict"] == "pass"
    assert [c["result"] for c in recorded["criteria"]] == ["pass", "pass"]
    [persisted] = events_of(store, "evaluation.proof.v1")
    assert persisted.payload == PROOF and persisted.caused_by == STARTED


@needs_bwrap
def test_a_crashing_handler_is_a_recorded_failed_call(tmp_path, store, artifacts):
    def broken(args: dict[str, Any], call: BridgeCall) -> Any:
        if args.get("fail") == "tool":
            raise ToolError("EVALUATOR_UNAVAILABLE", "no evaluator model is bound")
        raise KeyError("rubric")

    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("artifact.evaluate", {"fail": "tool"}))
        emit(call("artifact.evaluate", {"fail": "bug"}))
        emit(call("log.note", {"text": "still here"}))
        """,
        handlers={"artifact.evaluate": broken},
    )
    tool_error, crash, note = step_result(out)
    assert tool_error == ["err", "EVALUATOR_UNAVAILABLE", "no evaluator model is bound"]
    assert crash[:2] == ["err", "TOOL_CRASHED"] and "KeyError" in crash[2]
    assert note[0] == "ok"
    called = events_of(store, "tool.called.v1")
    assert [c.payload["ok"] for c in called] == [False, False, True]
    assert called[0].payload["detail"]["error"]["class"] == "EVALUATOR_UNAVAILABLE"
    assert usage_from_events(events_of(store)).bridge_calls == 3  # failed calls are charged
