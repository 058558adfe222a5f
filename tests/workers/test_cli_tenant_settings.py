"""`forge tenants update|show`: quotas and input locations, stored per tenant, refused clearly."""

import pytest
from typer.testing import CliRunner

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.error_codes import ErrorCode
from schemas.tenant_settings import input_bucket
from tests.support.errors import raises_code
from workers.cli import app
from workers.settings import Settings


def forge(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    assert forge("tenants", "create", "acme").exit_code == 0
    assert forge("tenants", "create", "globex").exit_code == 0
    return Settings.from_env()


def test_update_sets_quotas_and_locations_of_that_tenant_only(home, tmp_path):
    root = tmp_path / "acme-in"
    done = forge(
        "tenants", "update", "acme", "--max-runs", "3", "--max-tokens-per-day", "200000",
        "--add-input-root", str(root), "--add-input-bucket", "s3://acme-inputs/reports/",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "│ concurrent runs      │ 3" in done.output and "200,000" in done.output
    with open_tenant_settings(home.database_url) as store:
        acme, globex = store.get("acme"), store.get("globex")
    assert (acme.max_concurrent_runs, acme.max_tokens_per_day) == (3, 200_000)
    assert acme.input_roots == (str(root.resolve()),)
    assert acme.input_buckets == ("acme-inputs/reports/",)
    assert acme.updated_by == "cli"
    assert (globex.max_concurrent_runs, globex.input_roots, globex.input_buckets) == (None, (), ())
    lifted = forge("tenants", "update", "acme", "--max-runs", "unlimited",
                   "--remove-input-root", str(root))  # fmt: skip
    assert lifted.exit_code == 0, lifted.output
    shown = forge("tenants", "show", "acme")
    assert "│ concurrent runs      │ unlimited" in shown.output
    assert "│ input roots          │ none" in shown.output
    assert "acme-inputs/reports/" in shown.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-runs", "three"], "--max-runs 'three': give a whole number"),
        (["--max-tokens-per-day", "-5"], "--max-tokens-per-day '-5': give a whole number"),
        (["--add-input-bucket", "Acme Inputs"], "input bucket 'Acme Inputs' is not BUCKET"),
        (["--add-input-bucket", "acme-in/../x/"], "the prefix may not hold '.', '..'"),
        (["--remove-input-bucket", "other"], "cannot remove input bucket 'other'"),
        ([], "nothing to update"),
    ],
)
def test_bad_updates_are_one_line_and_change_nothing(home, args, message):
    forge("tenants", "update", "acme", "--max-runs", "2")
    with open_tenant_settings(home.database_url) as store:
        before = store.get("acme")
    refused = forge("tenants", "update", "acme", *args)
    assert refused.exit_code == 2 and message in refused.output, refused.output
    assert "Traceback" not in refused.output
    with open_tenant_settings(home.database_url) as store:
        assert store.get("acme") == before


def test_an_unknown_tenant_is_named(home):
    refused = forge("tenants", "update", "initech", "--max-runs", "1")
    assert refused.exit_code == 2 and "no tenant 'initech'" in refused.output
    assert forge("tenants", "show", "initech").exit_code == 2


def test_the_default_tenant_shows_the_deployment_locations(home):
    shown = forge("tenants", "show", "default")
    assert shown.exit_code == 0 and "+ FORGE_INPUT_ROOTS" in shown.output


def test_a_bucket_location_admits_keys_under_its_prefix_only():
    location = input_bucket("s3://acme-in/reports/")
    assert location.admits("acme-in", "reports/2026/q1.csv")
    assert not location.admits("acme-in", "private/q1.csv")
    assert not location.admits("acme-in-2", "reports/q1.csv")
    assert input_bucket("acme-in").admits("acme-in", "anything")


def test_an_input_root_must_be_absolute(home):
    with open_tenant_settings(home.database_url) as store, raises_code(ErrorCode.TENANT_INVALID):
        store.update("acme", SettingsChange(add_roots=("relative/dir",)), actor="t")
