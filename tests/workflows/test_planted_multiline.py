"""Multi-line and paired credentials never written down (issue 33), at every boundary.

A PEM private key (RSA-sized and EC-sized bodies), a JWT wrapped over lines and an unlabelled
AWS key pair are planted where a step can put them: a headerless input CSV, an output's field
names, stdout and stderr, `log.note`, a model-written program's printed output (followed by
more text, so only its tail goes back to the model) and an exception whose last lines are the
key's body. Then every place Forge writes or prints is searched for any 16-character fragment
of each secret: the event store, the worker's logs, the Temporal histories, the stored receipts,
the requests the model provider received, and the CLI's `status`, `events` and `receipts`.
File contents are not covered: an output holds what the step wrote (docs/security.md).

Real parts: the Temporal dev server, bubblewrap, the stores, the local Messages server, the CLI.
"""

import asyncio
import base64
import json
import logging
import random
import re
from typing import Any

from schemas.scope import Scope
from tests.workflows.model_env import executor, model_engine, model_step, run_python
from tests.workflows.plans import code_step, plan, report_profile

FRAGMENT = 16
_RNG = random.Random(33)


def _wrapped(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


def _pem(kind: str, size: int) -> tuple[str, list[str]]:
    body = _wrapped(base64.b64encode(_RNG.randbytes(size)).decode(), 64)
    block = "\n".join(
        [f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----"]
    )
    return block, body


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt() -> tuple[str, list[str]]:
    claims = {"sub": "svc-billing", "iat": 1764288000, "scope": "ledger:write", "n": _RNG.random()}
    token = ".".join(
        [
            _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
            _b64url(json.dumps(claims).encode()),
            _b64url(_RNG.randbytes(32)),
        ]
    )
    return "\n".join(_wrapped(token, 40)), [token.split(".", 1)[1]]


def _aws() -> tuple[str, str]:
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    key_id = "AKIA" + "".join(_RNG.choice(alnum) for _ in range(16))
    chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+"
    return key_id, "".join(_RNG.choice(chars) for _ in range(40))


RSA, RSA_BODY = _pem("RSA ", 1190)
EC, EC_BODY = _pem("EC ", 121)
JWT, JWT_PARTS = _jwt()
AWS_ID, AWS_SECRET = _aws()

STEP_A = f"""
import json, sys, forge_bridge
rsa, ec, jwt = {RSA!r}, {EC!r}, {JWT!r}
rows = open("input/keys.csv").read()
print(rsa); print(jwt)
print(ec, file=sys.stderr)
forge_bridge.call("log.note", {{"text": "using key {AWS_ID} / {AWS_SECRET}"}})
forge_bridge.call("log.note", {{"text": "token:\\n" + jwt}})
open("output/a.json", "w").write(json.dumps({{{AWS_ID!r}: "ci-bot", "rows": len(rows)}}))
"""
# The model's first program prints a key and more after it: only the tail reaches the model.
# It builds the key as it runs (the same bytes as MODEL_KEY): a program holding a credential
# is refused before it runs, so the key must not be in its text.
MODEL_KEY_SEED, MODEL_KEY_SIZE = 7, 1190
PRINTS = f"""
import base64, random
body = base64.b64encode(random.Random({MODEL_KEY_SEED}).randbytes({MODEL_KEY_SIZE})).decode()
lines = [body[i : i + 64] for i in range(0, len(body), 64)]
marker = "PRIVATE" + " KEY-----"
print("\\n".join(["-----BEGIN RSA " + marker, *lines, "-----END RSA " + marker]))
print("x" * 500)
"""
MODEL_BODY = _wrapped(
    base64.b64encode(random.Random(MODEL_KEY_SEED).randbytes(MODEL_KEY_SIZE)).decode(), 64
)
WRITES = "open('output/m.json', 'w').write('{\"ok\": true}')\n"
SENSITIVE = [*RSA_BODY, *EC_BODY, *MODEL_BODY, *JWT_PARTS, AWS_ID, AWS_SECRET]
STEP_B = f"raise ValueError('could not load signing key:\\n' + {RSA!r})\n"


def _fragments() -> re.Pattern[str]:
    windows = {s[i : i + FRAGMENT] for s in SENSITIVE for i in range(len(s) - FRAGMENT + 1)}
    return re.compile("|".join(re.escape(w) for w in sorted(windows)))


def _receipts(eng: Any, log: list[Any], run_id: str) -> str:
    """Every stored receipt of the run, read back from the artifact store."""
    refs = [
        e.payload["receipt_ref"]
        for e in log
        if e.run_id == run_id and e.type.startswith("step.receipt.")
    ]
    assert refs, "the run stored receipts"
    return "\n".join(
        eng.services.artifacts.read_bytes(Scope.default(), r["sha256"], 1 << 24).decode()
        for r in refs
    )


async def test_no_fragment_of_a_multiline_or_paired_secret_is_written_anywhere(
    temporal_env, task_queue, tmp_path, caplog, cli
):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="temporalio.activity")
    home = tmp_path / "home"  # the `cli` fixture's FORGE_HOME: the CLI reads these stores
    keys = tmp_path / "keys.csv"
    keys.write_text(f"aws-prod,{AWS_ID},{AWS_SECRET}\nstaging,none,none\n")
    script = [
        executor("m", run_python(PRINTS)),
        executor("m", run_python(WRITES)),
    ]
    doc = plan(
        code_step("a", STEP_A, ["output/a.json"], reads=["input/keys.csv"]),
        model_step("m", ["output/m.json"], depends_on=["a"]),
        code_step("b", STEP_B, ["output/b.json"], depends_on=["m"]),
        run_inputs=[{"name": "keys", "path": "input/keys.csv", "kind_key": "table.csv"}],
    )
    async with model_engine(temporal_env, home, task_queue, script) as (eng, server):
        handle = await eng.start(doc, {"keys": keys}, profile_document=report_profile())
        try:
            await handle.result()
        except Exception:  # noqa: BLE001 - step b fails on purpose
            pass
        run_id = handle.id
        log = eng.services.events.list_events(limit=1_000_000)
        histories = [(await handle.fetch_history()).to_json()]
        async for wf in eng.client.list_workflows(f'WorkflowId STARTS_WITH "{run_id}"'):
            if wf.id != run_id:
                h = eng.client.get_workflow_handle(wf.id, run_id=wf.run_id)
                histories.append((await h.fetch_history()).to_json())
        requests = json.dumps(server.requests)
        receipts = _receipts(eng, log, run_id)
        shown = {  # in a thread: the CLI runs its own event loop
            verb: await asyncio.to_thread(cli, *args)
            for verb, args in {
                "status": ("status", run_id),
                "events": ("events", "list", "--run", run_id, "--limit", "10000", "--json"),
                "receipts a": ("receipts", run_id, "a"),
                "receipts m": ("receipts", run_id, "m"),
            }.items()
        }
    by_step = {e.payload.get("step_key") for e in log if e.run_id == run_id}
    assert {"a", "m", "b"} <= by_step, "every step ran"
    assert len(server.requests) >= 2, "the model saw its first program's output"
    failed = [e for e in log if e.type == "step.failed.v1" and e.payload.get("step_key") == "b"]
    assert failed and "could not load signing key" in json.dumps(failed[-1].payload)
    for verb, result in shown.items():  # `status` exits 1: the run failed (step b)
        assert result.exit_code == (1 if verb == "status" else 0), (verb, result.output)
    assert "[REDACTED:" in shown["receipts a"].output, "the receipt listed the masked key name"
    places = {
        "events": "\n".join(e.model_dump_json() for e in log),
        "logs": "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records),
        "history": "\n".join(histories),
        "model requests": requests,
        "stored receipts": receipts,
        **{f"cli {verb}": result.output for verb, result in shown.items()},
    }
    pattern = _fragments()
    leaked = {
        where: sorted({m.group(0) for m in pattern.finditer(text)})
        for where, text in places.items()
    }
    assert leaked == {where: [] for where in places}
