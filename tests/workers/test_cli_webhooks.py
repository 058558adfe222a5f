"""`forge webhooks create|list|delete` as an administrator runs them on the machine."""

import base64
import re

from typer.testing import CliRunner

from activities.webhooks.signing import webhook_secret
from workers.cli import app
from workers.services.webhook_keys import KEY_FILE, server_signing_key
from workers.settings import Settings


def forge(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_a_webhook_from_creation_to_removal_with_its_secret_shown_once(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    unknown = forge("webhooks", "create", "https://hooks.example.com/forge", "--tenant", "acme")
    assert unknown.exit_code == 2 and "no tenant 'acme'" in unknown.output
    assert forge("tenants", "create", "acme").exit_code == 0
    made = forge(
        "webhooks",
        "create",
        "https://hooks.example.com/forge",
        "--event",
        "gate.requested.v1",
        "--tenant",
        "acme",
    )
    assert made.exit_code == 0, made.output
    hook = re.search(r"wh_[0-9a-f]{16}", made.output)[0]
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", made.output)[0]
    settings = Settings.from_env()
    assert secret == webhook_secret(server_signing_key(settings), hook)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    key_file = settings.home / KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600

    listed = forge("webhooks", "list", "--tenant", "acme")
    assert hook in listed.output and "gate.requested.v1" in listed.output
    assert secret not in listed.output and "live" in listed.output
    assert hook not in forge("webhooks", "list", "--tenant", "default").output

    refused = forge("webhooks", "create", "ftp://example.com/x", "--tenant", "acme")
    assert refused.exit_code == 2 and "WEBHOOK_INVALID" in refused.output
    other = forge("webhooks", "delete", hook, "--tenant", "default")
    assert other.exit_code == 2 and f"no webhook '{hook}'" in other.output
    assert forge("webhooks", "delete", hook, "--tenant", "acme").exit_code == 0
    assert hook not in forge("webhooks", "list", "--tenant", "acme").output
    assert "deleted" in forge("webhooks", "list", "--tenant", "acme", "--deleted").output


def test_the_signing_key_setting_wins_over_the_file(tmp_path):
    given = Settings(home=tmp_path / "home", webhook_signing_key="operator-chosen-key")
    assert server_signing_key(given) == b"operator-chosen-key"
    assert not (given.home / KEY_FILE).exists()
    made = Settings(home=tmp_path / "home")
    first = server_signing_key(made)
    assert server_signing_key(made) == first and len(first) == 64  # made once, then reused
