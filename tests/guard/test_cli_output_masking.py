"""A credential the CLI masked in a line it printed is recorded as a guard event, in the tenant
the command acted for (issue 18 §2), by the real entry point (`forge` = workers.cli.main).
"""

import sys

import pytest

from activities.store.events import open_event_store
from schemas.guard import GUARD_OUTPUT_MASKED
from workers.cli import main
from workers.settings import Settings

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def forge(monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["forge", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code


def recorded(tenant: str) -> list:
    with open_event_store(Settings.from_env().database_url) as events:
        return [e for e in events.read_stream(f"guard:{tenant}") if e.type == GUARD_OUTPUT_MASKED]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))


def test_an_error_line_it_masked_is_recorded_in_the_commands_tenant(monkeypatch, capsys):
    assert forge(monkeypatch, "artifacts", f"run-{SECRET}", "--tenant", "acme-cli") == 2
    printed = capsys.readouterr()
    assert SECRET not in printed.out + printed.err
    assert "[REDACTED:stripe-access-token]" in printed.err
    [event] = recorded("acme-cli")
    assert event.payload["sink"] == "cli"
    assert event.payload["source"] == "forge artifacts"
    assert [f["detector"] for f in event.payload["findings"]] == ["stripe-access-token"]
    assert SECRET not in event.model_dump_json()
    assert recorded("default") == []  # never in another tenant's log


def test_a_command_with_no_tenant_records_in_the_default_tenant(monkeypatch, capsys, tmp_path):
    assert forge(monkeypatch, "compile", str(tmp_path / f"{SECRET}.json")) == 2
    assert SECRET not in capsys.readouterr().err
    [event] = recorded("default")
    assert (event.payload["sink"], event.payload["source"]) == ("cli", "forge compile")


def test_a_clean_error_records_nothing(monkeypatch, capsys, tmp_path):
    assert forge(monkeypatch, "compile", str(tmp_path / "missing.json")) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    assert recorded("default") == []


def test_a_store_it_cannot_open_loses_the_findings_with_one_dim_line(monkeypatch, capsys, tmp_path):
    # Nothing listens on port 1 of the loopback: the database is down.
    monkeypatch.setenv("FORGE_DATABASE_URL", "postgresql+psycopg://forge@127.0.0.1:1/forge")
    assert forge(monkeypatch, "compile", str(tmp_path / f"{SECRET}.json")) == 2
    err = capsys.readouterr().err
    assert SECRET not in err
    assert "1 masked credential finding(s) were not recorded as guard events" in err
    assert "Traceback" not in err
