"""Stage 3: surfaced = registry ∩ permissions − prohibitions − policy forbids, capped by safety."""

from hypothesis import given
from hypothesis import strategies as st

from compiler.context import compile_context
from compiler.context.tools import surface_tools
from schemas.context import APPROVAL_RANK, PolicyDecision, PolicyResolution
from tests.compiler.context.build import draft, pack, request, rule, run_ctx, staged

MODES = ["auto", "notify", "confirm", "human"]


def _decision(n, forbids=(), downgrade=None):
    return PolicyDecision(
        policy_decision_id=f"pol_{n}",
        rule_id=f"r{n}",
        bundle_id="b",
        verdict="allow",
        requires=[],
        forbids=list(forbids),
        downgrade=downgrade or {},
        rationale="",
    )


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 12))
    ids = [f"t{i}" for i in range(n)]
    modes = {t: draw(st.sampled_from(MODES)) for t in ids}
    allowed = draw(st.sets(st.sampled_from(ids)))
    denied = draw(st.sets(st.sampled_from(ids)))
    prohibited = draw(st.sets(st.sampled_from(ids)))
    forbids = draw(st.lists(st.sets(st.sampled_from(ids), max_size=3), max_size=3))
    downgrades = draw(
        st.lists(
            st.dictionaries(st.sampled_from(ids), st.sampled_from(MODES), max_size=3), max_size=3
        )
    )
    safety = draw(st.sampled_from(MODES))
    return ids, modes, allowed, denied, prohibited, forbids, downgrades, safety


@given(scenarios())
def test_surface_is_exactly_the_intersection_capped_by_safety_mode(scenario):
    ids, modes, allowed, denied, prohibited, forbids, downgrades, safety = scenario
    p = pack(
        tools=[{"tool_id": t, "description": t, "approval_mode": modes[t]} for t in ids],
        permissions=[{"tool_id": t} for t in sorted(allowed)]
        + [{"tool_id": t, "allow": False} for t in sorted(denied)],
    )
    decisions = [_decision(i, forbids=f) for i, f in enumerate(forbids)] + [
        _decision(100 + i, downgrade=d) for i, d in enumerate(downgrades)
    ]
    ctx = run_ctx(safety_mode=safety, prohibitions=sorted(prohibited))
    d = draft(p, ctx, request(), policy=PolicyResolution(decisions=decisions))
    surface = staged(d, surface_tools).tools

    forbidden = set().union(*forbids) if forbids else set()
    effective = dict(modes)
    for t in ids:
        named = [d[t] for d in downgrades if t in d]
        if named:
            effective[t] = max(named, key=APPROVAL_RANK.__getitem__)
    expected = [
        t
        for t in ids  # registry order
        if t in allowed - denied
        and t not in prohibited
        and t not in forbidden
        and APPROVAL_RANK[effective[t]] <= APPROVAL_RANK[safety]
    ]
    assert [s.tool_id for s in surface.tools] == expected
    assert all(s.approval_mode == effective[s.tool_id] for s in surface.tools)
    assert all(s.declared_mode == modes[s.tool_id] for s in surface.tools)
    # every registry tool is either surfaced or withheld with a reason, never both, never lost
    withheld = [w.id for w in surface.withheld]
    assert sorted(withheld + expected) == sorted(ids)
    assert all(w.kind == "tool" and w.reason for w in surface.withheld)


def test_withheld_reasons_name_the_cause():
    p = pack(
        tools=[
            {"tool_id": t, "description": t, "approval_mode": m}
            for t, m in [("a", "auto"), ("b", "auto"), ("c", "auto"), ("d", "auto"), ("e", "human")]
        ],
        permissions=[{"tool_id": "b"}, {"tool_id": "b", "allow": False}]
        + [{"tool_id": t} for t in "cde"],
    )
    ctx = run_ctx(safety_mode="confirm", prohibitions=["c"])
    decisions = PolicyResolution(decisions=[_decision(1, forbids=["d"])])
    surface = staged(draft(p, ctx, request(), policy=decisions), surface_tools).tools
    reasons = {w.id: w.reason for w in surface.withheld}
    assert reasons == {
        "a": "no permission in the pack",
        "b": "permission denies it",
        "c": "prohibited by the run",
        "d": "forbidden by policy rule b/r1",
        "e": "approval mode human is above the run's safety mode confirm",
    }


def _surfaced(facts, safety):
    bundles = [
        {
            "bundle_id": "egress",
            "rules": [
                rule(
                    "allowlisted",
                    {"===": [{"var": "facts.network"}, True]},
                    downgrade={"http.request": "notify", "deploy.prod": "confirm"},
                ),
                rule(
                    "strict",
                    {"===": [{"var": "facts.strict"}, True]},
                    downgrade={"log.note": "human"},
                ),
            ],
        }
    ]
    cc = compile_context(
        pack(policy_bundles=bundles), run_ctx(facts=facts, safety_mode=safety), request()
    )
    return {t.tool_id: t.approval_mode for t in cc.surfaced_tools}


def test_policy_downgrade_changes_the_mode_then_the_safety_cap_applies():
    assert _surfaced({}, "notify") == {"sandbox.session": "auto", "log.note": "auto"}
    # the policy lets http.request through with notify, and deploy.prod with confirm
    assert _surfaced({"network": True}, "notify") == {
        "sandbox.session": "auto",
        "log.note": "auto",
        "http.request": "notify",
    }
    assert _surfaced({"network": True}, "confirm") == {
        "sandbox.session": "auto",
        "log.note": "auto",
        "http.request": "notify",
        "deploy.prod": "confirm",
    }
    # a stricter mode from policy can hide a tool the registry would have shown
    assert "log.note" not in _surfaced({"strict": True}, "confirm")
    assert _surfaced({"strict": True}, "human")["log.note"] == "human"


def test_native_name_and_schema_travel_with_the_surfaced_tool():
    cc = compile_context(pack(), run_ctx(safety_mode="auto"), request())
    (session,) = [t for t in cc.surfaced_tools if t.tool_id == "sandbox.session"]
    assert session.native_name == "run_python"
    assert [t.tool_id for t in cc.manifests.tool_manifest] == ["sandbox.session", "log.note"]
