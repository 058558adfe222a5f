"""Each tenant reads inputs only from its own S3 buckets and prefixes (issue 20 §2), over HTTP.

The deployment's FORGE_INPUT_BUCKETS are the default tenant's; acme may read only under the
prefix an admin gave it, and globex, given nothing, reads no bucket at all, even one acme may.
"""

import hashlib

import pytest

from activities.store.artifacts_s3 import s3_client
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.scope import Scope
from tests.api.test_capsules import upload
from tests.api.test_quotas import live_run
from tests.api.test_runs import counting_plan, finished
from tests.store.s3 import CREDENTIALS, moto_endpoint, use_test_credentials

__all__ = ["moto_endpoint"]

BUCKET = "shared-inputs"


@pytest.fixture
def s3_objects(moto_endpoint, monkeypatch) -> str:
    use_test_credentials(monkeypatch)
    client = s3_client(moto_endpoint, **CREDENTIALS)
    client.create_bucket(Bucket=BUCKET)
    for tenant, rows in (("acme", 3), ("globex", 7)):
        body = "a,b\n" + "".join(f"{i},{i}\n" for i in range(rows))
        client.put_object(Bucket=BUCKET, Key=f"{tenant}/data.csv", Body=body.encode())
    return moto_endpoint


async def test_runs_read_only_their_tenants_buckets_and_prefixes(api_with, s3_objects):
    async with api_with(s3_endpoint=s3_objects, input_buckets=(BUCKET,)) as api:
        with open_tenant_settings(api.settings.database_url) as store:
            store.update("acme", SettingsChange(add_buckets=(f"{BUCKET}/acme/",)), actor="t")
        own, theirs = f"s3://{BUCKET}/acme/data.csv", f"s3://{BUCKET}/globex/data.csv"
        async with api.client(role="operator") as acme:
            started = await acme.post(
                "/v1/runs", json={"plan": counting_plan(), "inputs": {"data": own}}
            )
            assert started.status_code == 201, started.text
            run_id = started.json()["run_id"]
            assert (await finished(acme, run_id))["status"] == "completed"
            made = await acme.post("/v1/capsules", json={"run_id": run_id, "name": "rows"})
            assert made.status_code == 201, made.text
            before = (await acme.get("/v1/runs")).json()["runs"]
            for path, body in (
                ("/v1/runs", {"plan": counting_plan(), "inputs": {"data": theirs}}),
                ("/v1/capsules/rows/versions/1/runs", {"inputs": {"data": theirs}}),
            ):
                refused = await acme.post(path, json=body)
                assert refused.status_code == 422, refused.text
                problem = refused.json()
                assert problem["code"] == "INPUT_LOCATION_REFUSED", problem
                assert "outside the input buckets of tenant 'acme'" in problem["detail"]
                assert f"{BUCKET}/acme/" in problem["detail"]
            assert (await acme.get("/v1/runs")).json()["runs"] == before  # nothing started
        async with api.client("globex", "operator") as globex:
            sha = await upload(globex, b"a,b\n1,1\n")
            started = await globex.post(
                "/v1/runs", json={"plan": counting_plan(), "inputs": {"data": sha}}
            )
            assert started.status_code == 201, started.text
            for ref in (own, theirs):  # the default tenant's bucket is not globex's
                refused = await globex.post(
                    "/v1/runs", json={"plan": counting_plan(), "inputs": {"data": ref}}
                )
                assert refused.status_code == 422, refused.text
                assert "of tenant 'globex' (none)" in refused.json()["detail"]


async def test_a_request_refused_at_a_quota_copies_no_s3_input(api_with, s3_objects):
    """The quota is checked before a request's S3 objects are copied into the tenant's store:
    a 429 leaves nothing behind; the same request once a slot is free stores the object."""
    fresh = b"a,b\n" + b"".join(f"{i},{i * i}\n".encode() for i in range(5))
    s3_client(s3_objects, **CREDENTIALS).put_object(Bucket=BUCKET, Key="acme/fresh.csv", Body=fresh)
    digest = f"sha256:{hashlib.sha256(fresh).hexdigest()}"
    inputs = {"data": f"s3://{BUCKET}/acme/fresh.csv"}
    async with api_with(s3_endpoint=s3_objects, input_buckets=(BUCKET,)) as api:
        with open_tenant_settings(api.settings.database_url) as store:
            change = SettingsChange(add_buckets=(f"{BUCKET}/acme/",), max_concurrent_runs=1)
            store.update("acme", change, actor="t")
        acme = Scope.of_tenant("acme")
        async with api.client(role="operator") as http:
            first = await http.post(
                "/v1/runs",
                json={"plan": counting_plan(), "inputs": {"data": await upload(http, b"a,b\n")}},
            )
            assert first.status_code == 201, first.text
            assert (await finished(http, first.json()["run_id"]))["status"] == "completed"
            made = await http.post(
                "/v1/capsules", json={"run_id": first.json()["run_id"], "name": "rows"}
            )
            assert made.status_code == 201, made.text
            waiting = await live_run(http)  # the tenant's one slot
            for path, body in (
                ("/v1/runs", {"plan": counting_plan(), "inputs": inputs}),
                ("/v1/capsules/rows/versions/1/runs", {"inputs": inputs}),
            ):
                refused = await http.post(path, json=body)
                assert refused.status_code == 429, refused.text
                assert refused.json()["code"] == "QUOTA_EXCEEDED"
            assert not api.eng.services.artifacts.exists(acme, digest)  # nothing copied
            assert (await http.post(f"/v1/runs/{waiting}/cancel")).status_code == 202
            await finished(http, waiting)
            started = await http.post("/v1/capsules/rows/versions/1/runs", json={"inputs": inputs})
            assert started.status_code == 201, started.text
            assert api.eng.services.artifacts.exists(acme, digest)  # the control: it copies
