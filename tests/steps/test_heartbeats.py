"""One heartbeat thread serves every attempt in flight, in each attempt's own context."""

import contextvars
import threading
import time

from activities.harness import heartbeats as hb

ATTEMPT: contextvars.ContextVar[str] = contextvars.ContextVar("attempt", default="?")


def _wait_for(check, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_each_registered_attempt_is_heartbeaten_in_its_context_and_never_after_it_left(
    monkeypatch,
):
    beats: list[str] = []
    calls = {"n": 0}

    def heartbeat() -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("cancelled")  # one attempt's failure stops nobody
        beats.append(ATTEMPT.get())

    monkeypatch.setattr(hb.activity, "heartbeat", heartbeat)
    beat = hb.Heartbeats(every_s=0.02)

    def attempt(name: str, until: threading.Event) -> None:
        ATTEMPT.set(name)
        with beat.beating():
            until.wait(10)

    a_done, b_done = threading.Event(), threading.Event()
    threads = [
        threading.Thread(target=attempt, args=("a", a_done)),
        threading.Thread(target=attempt, args=("b", b_done)),
    ]
    for t in threads:
        t.start()
    _wait_for(lambda: beats.count("a") >= 2 and beats.count("b") >= 2)
    a_done.set()
    threads[0].join()
    after_a = beats.count("a")
    _wait_for(lambda: beats.count("b") >= after_a + 5)  # b goes on beating ...
    assert beats.count("a") == after_a  # ... and a, which left, never again
    b_done.set()
    threads[1].join()
    assert set(beats) == {"a", "b"}  # each beat ran in the context that registered it
    assert len([t for t in threading.enumerate() if t.name == "forge-heartbeats"]) >= 1
