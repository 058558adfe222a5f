"""Credentials never cross the bridge (issue 18 §2): not out of the sandbox in a call's
arguments, not into it in a result; each one masked is a guard.masked.v1 event."""

from typing import Any

from tests.sandbox.bridge.support import Counting, events_of, run_step, step_result
from tests.support.sandbox import needs_bwrap

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
GITLAB = "glpat-Xk9fQz8LmN2pR4tV6wY1"


@needs_bwrap
def test_a_result_and_arguments_holding_credentials_arrive_masked(tmp_path, store, artifacts):
    def leaky(args: dict[str, Any], _call: Any) -> dict[str, Any]:
        return {"body": f"here is the key: STRIPE_SECRET_KEY={STRIPE}", "echo": args}

    tool = Counting(leaky)
    _result, out = run_step(
        tmp_path,
        store,
        artifacts,
        f"emit(call('http.request', {{'url': 'https://api.example.com/?t={GITLAB}'}}))\n",
        handlers={"http.request": tool},
    )
    [(status, reply)] = step_result(out)
    assert status == "ok", out
    assert STRIPE not in str(out) and GITLAB not in str(out)
    assert "[REDACTED:stripe-access-token]" in reply["body"]
    # the handler was never given the credential the step tried to send
    assert tool.calls == [{"url": "https://api.example.com/?t=[REDACTED:gitlab-pat]"}]
    written = "".join(e.model_dump_json() for e in store.list_events(limit=10_000))
    assert STRIPE not in written and GITLAB not in written
    [called] = events_of(store, "tool.called.v1")
    found = [e for e in store.list_events(limit=10_000) if e.type == "guard.masked.v1"]
    assert [e.payload["event_id"] for e in found] == [called.event_id]
    detectors = {f["detector"] for f in found[0].payload["findings"]}
    assert detectors == {"stripe-access-token"}  # the call records no query string
