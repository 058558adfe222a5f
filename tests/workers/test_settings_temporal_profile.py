"""Temporal's own configuration in Settings: profiles, inline PEM, where its credentials go.

The FORGE_* side and the precedence between the two are in test_settings_temporal.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.temporal_config import CERT_TEXT, write_profile
from tests.support.tls import make_certificates
from workers.services.temporal_connect import connect_arguments, transport
from workers.settings import Settings, SettingsError


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return make_certificates(tmp_path, ["temporal.internal"]).issue_client(tmp_path, "w")


def test_temporals_credentials_never_go_to_an_address_forge_names_instead(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    # A Cloud key in Temporal's configuration is for Temporal's address; FORGE_TEMPORAL_ADDRESS
    # naming another server must not receive it (nor the client certificate).
    settings = Settings.from_env(
        {
            "TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
            "TEMPORAL_API_KEY": "cloud-key",
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pair[0]),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pair[1]),
            "TEMPORAL_NAMESPACE": "billing",
            "FORGE_TEMPORAL_ADDRESS": "127.0.0.1:7233",
        }
    )
    assert settings.temporal_address == "127.0.0.1:7233"
    assert settings.temporal_api_key is None
    assert settings.temporal_tls_cert is None and settings.temporal_tls_key is None
    assert not settings.temporal_tls_on
    assert settings.namespace == "billing"


def test_a_broken_profile_line_is_located_never_quoted(tmp_path: Path) -> None:
    path = tmp_path / "temporal.toml"
    path.write_text('[profile.default]\napi_key = "sk-SECRET-123\n', encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"TEMPORAL_CONFIG_FILE": str(path)})
    assert "line 2" in str(caught.value)
    assert "sk-SECRET" not in str(caught.value)


def test_a_tls_section_turns_tls_on_as_in_temporals_own_clients(tmp_path: Path) -> None:
    path = tmp_path / "temporal.toml"
    path.write_text(
        '[profile.default]\naddress = "h:7233"\n[profile.default.tls]\n', encoding="utf-8"
    )
    assert Settings.from_env({"TEMPORAL_CONFIG_FILE": str(path)}).temporal_tls_on
    path.write_text(
        '[profile.default]\naddress = "h:7233"\n[profile.default.tls]\ndisabled = true\n',
        encoding="utf-8",
    )
    assert not Settings.from_env({"TEMPORAL_CONFIG_FILE": str(path)}).temporal_tls_on


def test_a_profile_that_cannot_load_names_the_file_orwrite_profile(tmp_path: Path) -> None:
    broken = write_profile(tmp_path, "[profile.default\naddress = 1")
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"TEMPORAL_CONFIG_FILE": str(broken)})
    message = str(caught.value)
    assert message.startswith(f"TEMPORAL_CONFIG_FILE={str(broken)!r}") and "\n" not in message
    good = write_profile(tmp_path, '[profile.default]\naddress = "a:1"\n')
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"TEMPORAL_CONFIG_FILE": str(good), "TEMPORAL_PROFILE": "staging"})
    assert str(caught.value).startswith("TEMPORAL_PROFILE='staging' is invalid")
    assert str(good) in str(caught.value)


def test_a_bad_file_in_a_profile_names_the_profile_key(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path,
        f'[profile.default]\naddress = "a:1"\n[profile.default.tls]\n'
        f'server_ca_cert_path = "{tmp_path / "missing.pem"}"\n',
    )
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"TEMPORAL_CONFIG_FILE": str(path)})
    assert str(caught.value).startswith(
        f"tls.server_ca_cert_path of Temporal profile 'default' in {path}="
    )


def test_an_inline_key_that_is_not_one_is_refused_without_showing_it() -> None:
    text = "-----BEGIN CERTIFICATE-----\nsecret-looking-material\n"
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(
            {
                "TEMPORAL_ADDRESS": "h:7233",
                "TEMPORAL_TLS_CLIENT_CERT_DATA": CERT_TEXT,
                "TEMPORAL_TLS_CLIENT_KEY_DATA": text,
            }
        )
    assert str(caught.value).startswith("TEMPORAL_TLS_CLIENT_KEY_DATA='***' is invalid")
    assert "secret-looking-material" not in str(caught.value)


def test_inline_pem_is_held_as_bytes_and_the_key_as_a_secret() -> None:
    key_text = "-----BEGIN PRIVATE KEY-----\nkey-material\n-----END PRIVATE KEY-----\n"
    settings = Settings.from_env(
        {
            "TEMPORAL_ADDRESS": "h:7233",
            "TEMPORAL_TLS_CLIENT_CERT_DATA": CERT_TEXT,
            "TEMPORAL_TLS_CLIENT_KEY_DATA": key_text,
        }
    )
    assert settings.temporal_tls_cert == CERT_TEXT.encode()
    assert settings.temporal_tls_key is not None and "key-material" not in repr(settings)
    tls = connect_arguments(settings)["tls"]
    assert tls.client_cert == CERT_TEXT.encode()
    assert tls.client_private_key == key_text.encode()
    assert "(inline PEM)" in transport(settings)
