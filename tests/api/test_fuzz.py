"""Schemathesis over the live API, a worker running, on SQLite and PostgreSQL: zero failures.

Every operation as an administrator of one tenant and as a viewer, with the six response checks
(tests/api/fuzz.py). Key revocation is fuzzed on its own, as the other tenant's administrator
(whose key it may revoke; the first tenant's keys must outlive it).
`make fuzz` runs the same tests deeper (FORGE_FUZZ=deep: stateful links, many more examples).
"""

import asyncio
import os

import httpx
import pytest

from tests.api.fuzz import DEEP, QUICK, fuzz

DEPTH = DEEP if os.environ.get("FORGE_FUZZ") == "deep" else QUICK
REVOKE = "revoke_key"
pytestmark = pytest.mark.timeout(3600 if DEPTH is DEEP else 600)


def _operations(url: str) -> set[str]:
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    return {
        f"{method.upper()} {path}"
        for path, ops in paths.items()
        for method, op in ops.items()
        if op["operationId"] != REVOKE
    }


@pytest.mark.parametrize("role", ["admin", "viewer"])
async def test_every_operation_holds_under_fuzzing(api, role):
    report = await asyncio.to_thread(
        fuzz, api.url, api.tokens["acme", role], DEPTH, exclude=(REVOKE,)
    )
    print(
        f"\nfuzz as {role}: {len(report.operations)} operations, {report.cases} cases, "
        f"{report.seconds:.1f}s, phases {report.phases}"
    )
    assert report.operations == _operations(api.url)
    assert report.cases >= len(report.operations) * 2
    ran = {phase for phase, status in report.phases.items() if status != "skip"}
    assert {"coverage", "fuzzing"} | ({"stateful"} if DEPTH.stateful else set()) <= ran
    assert not report.failures and not report.errors, report.explain()


async def test_key_revocation_holds_under_fuzzing(api):
    report = await asyncio.to_thread(
        fuzz, api.url, api.tokens["globex", "admin"], DEPTH, include=(REVOKE,)
    )
    assert report.operations == {"POST /v1/keys/{key_id}/revoke"}
    assert report.cases >= 2
    assert not report.failures and not report.errors, report.explain()
    # acme's keys are another tenant's: nothing the fuzzer sent as globex revoked one of them.
    async with api.client("acme", "viewer") as http:
        assert (await http.get("/v1/runs")).status_code == 200
