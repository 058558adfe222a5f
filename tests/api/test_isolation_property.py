"""Random sequences of API requests from two tenants: no answer to one holds the other's ids or
bytes (issue 20 §4), and every id of the other answers 404, as an id that does not exist.

A Hypothesis state machine drives acme and globex over real HTTP (sync clients, in a thread,
while the test's loop runs the worker): each uploads content only it holds, starts runs that
stop at a gate, lists, reads, downloads, decides and cancels, and registers webhooks and keys,
on its own ids and on the other's. After every request, the answer is searched for everything
the other tenant made: run ids, gate ids, upload hashes and bytes, webhook and key ids.
"""

import asyncio
import json
import uuid

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from tests.api.server import Api
from tests.workflows.test_gates import gated_plan

TENANTS = ("acme", "globex")
OTHER = {"acme": "globex", "globex": "acme"}


class TwoTenants(RuleBasedStateMachine):
    """Both tenants acting at random; `secrets[t]` is everything of t the other must not see."""

    api: Api  # set on the class by the test, before Hypothesis builds instances

    def __init__(self) -> None:
        super().__init__()
        self.http = {
            t: httpx.Client(
                base_url=self.api.url,
                headers={"Authorization": f"Bearer {self.api.tokens[t, 'admin']}"},
                timeout=60,
            )
            for t in TENANTS
        }
        self.secrets: dict[str, set[str]] = {t: set() for t in TENANTS}
        self.last: tuple[str, httpx.Response, str] | None = None  # tenant, answer, what it asked

    runs = Bundle("runs")  # (tenant, run_id)

    def teardown(self) -> None:
        for client in self.http.values():
            client.close()

    def _sent(self, tenant: str, method: str, path: str, **kw: object) -> httpx.Response:
        answer = self.http[tenant].request(method, path, **kw)  # type: ignore[arg-type]
        self.last = (tenant, answer, path + json.dumps(kw.get("json")))
        return answer

    def _absent(self, tenant: str, answer: httpx.Response) -> None:
        assert answer.status_code == 404, (tenant, answer.request.url, answer.text)

    @rule(tenant=st.sampled_from(TENANTS), size=st.integers(1, 2048))
    def upload(self, tenant: str, size: int) -> None:
        content = f"{tenant}-only-{uuid.uuid4().hex}-".encode() * (size // 50 + 1)
        answer = self._sent(tenant, "POST", "/v1/uploads", files={"file": ("d.txt", content)})
        assert answer.status_code == 201, answer.text
        self.secrets[tenant] |= {answer.json()["sha256"], content.decode()[:44]}

    @rule(target=runs, tenant=st.sampled_from(TENANTS))
    def start_run(self, tenant: str) -> tuple[str, str]:
        answer = self._sent(tenant, "POST", "/v1/runs", json={"plan": gated_plan()})
        assert answer.status_code == 201, answer.text
        run_id = answer.json()["run_id"]
        self.secrets[tenant].add(run_id)
        return tenant, run_id

    @rule(run=runs, reader=st.sampled_from(TENANTS))
    def read_run(self, run: tuple[str, str], reader: str) -> None:
        owner, run_id = run
        for path in (
            f"/v1/runs/{run_id}",
            f"/v1/runs/{run_id}/events",
            f"/v1/runs/{run_id}/artifacts",
            f"/v1/runs/{run_id}/artifacts/output/a.json",
        ):
            answer = self._sent(reader, "GET", path)
            if reader != owner:
                self._absent(reader, answer)

    @rule(run=runs, decider=st.sampled_from(TENANTS))
    def decide(self, run: tuple[str, str], decider: str) -> None:
        owner, run_id = run
        gates = self.http[owner].get("/v1/gates", params={"run_id": run_id}).json()["gates"]
        if not gates:
            return  # not at its gate yet, or decided
        gate = gates[0]
        body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "ok"}
        answer = self._sent(decider, "POST", f"/v1/gates/{gate['gate']}/decision", json=body)
        if decider != owner:
            self._absent(decider, answer)
            assert self.http[owner].get("/v1/gates", params={"run_id": run_id}).json()["gates"]
        else:
            assert answer.status_code in (200, 409), answer.text

    @rule(run=runs, canceller=st.sampled_from(TENANTS))
    def cancel(self, run: tuple[str, str], canceller: str) -> None:
        owner, run_id = run
        answer = self._sent(canceller, "POST", f"/v1/runs/{run_id}/cancel")
        if canceller != owner:
            self._absent(canceller, answer)
        else:
            assert answer.status_code in (200, 202, 409), answer.text

    @rule(tenant=st.sampled_from(TENANTS))
    def list_everything(self, tenant: str) -> None:
        for path in ("/v1/runs", "/v1/gates", "/v1/webhooks", "/v1/keys", "/v1/capsules",
                     "/v1/quota"):  # fmt: skip
            answer = self._sent(tenant, "GET", path)
            assert answer.status_code == 200, answer.text

    @rule(tenant=st.sampled_from(TENANTS))
    def register(self, tenant: str) -> None:
        hook = self._sent(
            tenant,
            "POST",
            "/v1/webhooks",
            json={"url": f"https://{tenant}.example.com/hook", "events": ["run.failed.v1"]},
        )
        assert hook.status_code == 201, hook.text
        webhook_id = hook.json()["webhook"]["webhook_id"]
        self.secrets[tenant] |= {webhook_id, hook.json()["secret"], f"{tenant}.example.com"}
        key = self._sent(tenant, "POST", "/v1/keys", json={"role": "viewer", "name": "probe"})
        assert key.status_code == 201, key.text
        self.secrets[tenant] |= {key.json()["key"]["key_id"], key.json()["token"]}
        other = OTHER[tenant]
        self._absent(other, self._sent(other, "GET", f"/v1/webhooks/{webhook_id}"))
        revoke = f"/v1/keys/{key.json()['key']['key_id']}/revoke"
        self._absent(other, self._sent(other, "POST", revoke))

    @invariant()
    def nothing_of_the_other_tenant_in_the_last_answer(self) -> None:
        if self.last is None:
            return
        tenant, answer, asked = self.last
        # An id the request named comes back in its 404 (`instance`, `detail`): the asker
        # knew it already. Anything else of the other tenant's is a leak.
        leaked = sorted(
            s for s in self.secrets[OTHER[tenant]] if s in answer.text and s not in asked
        )
        assert not leaked, (tenant, answer.request.method, answer.request.url, leaked)


async def test_two_tenants_acting_at_random_never_see_each_other(api: Api) -> None:
    TwoTenants.api = api
    test = TwoTenants.TestCase
    test.settings = settings(
        max_examples=4,
        stateful_step_count=12,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    await asyncio.to_thread(test().runTest)
