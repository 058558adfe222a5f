"""Stage 7: packing by priority; truncation is explicit and visible; nothing disappears."""

from hypothesis import given
from hypothesis import strategies as st

from compiler.context import compile_context
from compiler.context.buckets import _Draft, pack_bucket
from compiler.context.tokens import estimate_tokens
from schemas.context import BUCKETS, BucketContent
from tests.compiler.context.build import memory, pack, ref, request, run_ctx


def test_token_estimate_is_ceil_of_utf8_bytes_over_four():
    assert [estimate_tokens(t) for t in ["", "a", "abcd", "abcde"]] == [0, 1, 1, 2]
    assert estimate_tokens("é" * 4) == 2  # 8 bytes
    assert estimate_tokens("𝄞") == 1  # 4 bytes


drafts = st.lists(st.tuples(st.text(max_size=40), st.integers(-5, 5)), max_size=30).map(
    lambda xs: [_Draft(f"s[{i}]", "k", t, p) for i, (t, p) in enumerate(xs)]
)


@given(drafts, st.integers(0, 200))
def test_every_block_appears_once_in_priority_order_and_used_fits(ds, budget):
    out = BucketContent.model_validate(pack_bucket(ds, budget))
    assert sorted(b.source for b in out.blocks) == sorted(d.source for d in ds)
    expected = sorted(ds, key=lambda d: -d.priority)  # stable: ties keep input order
    assert [b.source for b in out.blocks] == [d.source for d in expected]
    assert out.used_tokens == sum(b.tokens for b in out.blocks if not b.truncated)
    assert out.used_tokens <= budget
    assert out.truncated == any(b.truncated for b in out.blocks)
    for b, d in zip(out.blocks, expected, strict=True):
        assert b.text == ("" if b.truncated else d.text)
        assert b.tokens == estimate_tokens(d.text)


def test_a_block_that_does_not_fit_is_truncated_and_a_smaller_one_after_it_still_fits():
    ds = [_Draft("big", "k", "x" * 400, 9), _Draft("small", "k", "y" * 8, 1)]
    out = BucketContent.model_validate(pack_bucket(ds, 50))
    assert [(b.source, b.truncated, b.text) for b in out.blocks] == [
        ("big", True, ""),
        ("small", False, "y" * 8),
    ]
    assert (out.used_tokens, out.budget_tokens, out.truncated) == (2, 50, True)


def test_truncation_is_in_the_budget_report_and_the_prompt():
    refs = [ref(i, summary="word " * 40, priority=i) for i in range(10)]
    cc = compile_context(pack(), run_ctx(bucket_tokens=1000), request(), evidence=lambda q: refs)
    report = cc.budget_report
    assert report.allocations["evidence"] == 300
    assert report.used_at_compile["evidence"] <= 300
    kept = len(cc.manifests.evidence_manifest)
    assert kept == 10  # the manifest lists every admitted ref ...
    truncated = report.truncated_blocks["evidence"]  # ... and the report the ones left out
    assert report.bucket_truncations["evidence"] == len(truncated) > 0
    # highest priority first: the lowest-priority refs are the ones truncated
    assert truncated == [f"evidence:kg:item:{i}" for i in range(len(truncated) - 1, -1, -1)]
    shown = cc.task_prompt.count("- kg:item:")
    assert shown + len(truncated) == 10
    assert f"({len(truncated)} more block(s) omitted to fit the token budget.)" in cc.task_prompt
    assert set(report.bucket_truncations) == {"evidence"}
    assert report.token_estimator == "ceil(utf8_bytes/4)"


def test_redaction_applies_to_evidence_memory_and_session_only():
    p = pack(
        redaction_rules=[r"sk-[a-z0-9]{8}", r"\b\d{3}-\d{2}-\d{4}\b"],
        system_blocks=[{"kind": "role", "text": "keys look like sk-abcdefgh"}],
    )
    req = request(
        message="ticket 123-45-6789 stays in the task",
        session=[{"kind": "user", "text": "my key is sk-12345678"}],
    )
    cc = compile_context(
        p,
        run_ctx(),
        req,
        evidence=lambda q: [ref(1, summary="ssn 123-45-6789 on file")],
        memory=lambda q: [memory(1, text="uses sk-zzzzzzzz")],
    )
    assert "keys look like sk-abcdefgh" in cc.system_prompt
    assert "ticket 123-45-6789 stays in the task" in cc.task_prompt
    assert "ssn [REDACTED] on file" in cc.task_prompt
    assert "uses [REDACTED]" in cc.task_prompt
    assert "user: my key is [REDACTED]" in cc.task_prompt
    assert "sk-12345678" not in cc.task_prompt and "sk-zzzzzzzz" not in cc.task_prompt
    assert cc.runtime_controls.redaction_rules_active == p.redaction_rules


def test_prompts_have_one_heading_per_non_empty_bucket_in_order():
    cc = compile_context(
        pack(),
        run_ctx(),
        request(
            sections=[{"kind": "packet", "text": "PACKET", "priority": 99}],
            session=[{"kind": "user", "text": "hi"}],
        ),
        evidence=lambda q: [ref(1)],
        memory=lambda q: [memory(1)],
    )
    system_heads = [line for line in cc.system_prompt.splitlines() if line.startswith("## ")]
    task_heads = [line for line in cc.task_prompt.splitlines() if line.startswith("## ")]
    assert system_heads == ["## System", "## Instructions", "## Tools"]  # no policy fired
    assert task_heads == ["## Task", "## Evidence", "## Memory", "## Recent turns"]
    assert cc.task_prompt.index("Do the step.") < cc.task_prompt.index("PACKET")
    assert "`run_python` (sandbox.session; approval: auto): run code" in cc.system_prompt
    assert '`forge_bridge.call("log.note", args)` (approval: auto): note' in cc.system_prompt
    assert set(cc.budget_report.used_at_compile) == set(BUCKETS)


def test_a_credential_in_evidence_never_reaches_the_prompt():
    """Issue 18 §2: every packed block has its credentials masked, redaction rules or not."""
    secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    refs = [ref(0, summary=f"the billing config sets STRIPE_SECRET_KEY={secret} for prod")]
    cc = compile_context(pack(), run_ctx(), request(), evidence=lambda q: refs)
    assert secret not in cc.task_prompt and secret not in cc.model_dump_json()
    assert "STRIPE_SECRET_KEY=[REDACTED:stripe-access-token]" in cc.task_prompt
    ds = [_Draft("note", "k", f"token {secret}", 1)]
    [block] = BucketContent.model_validate(pack_bucket(ds, 100)).blocks
    assert block.text == "token [REDACTED:stripe-access-token]"
