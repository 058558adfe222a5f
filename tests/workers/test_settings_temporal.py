"""How Settings reach Temporal: FORGE_TEMPORAL_* over Temporal's own variables and TOML profile.

Settings read the environment (a mapping here, never the process's); connect_arguments turns
them into Client.connect's arguments. The connections themselves are tested on loopback in
tests/workers/test_temporal_cluster.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from tests.support.temporal_config import CERT_TEXT, write_profile
from tests.support.tls import LocalCertificates, make_certificates
from workers.process.devserver import DevServer, DevServerError, ensure_address
from workers.services.temporal_connect import connect_arguments, transport
from workers.settings import Settings, SettingsError


@pytest.fixture
def certs(tmp_path: Path) -> LocalCertificates:
    return make_certificates(tmp_path, ["temporal.internal"])


@pytest.fixture
def pair(certs: LocalCertificates, tmp_path: Path) -> tuple[Path, Path]:
    return certs.issue_client(tmp_path, "forge-worker")


def test_without_any_variable_nothing_is_set_and_tls_is_off(tmp_path: Path) -> None:
    settings = Settings.from_env({"XDG_CONFIG_HOME": str(tmp_path)})
    assert settings.temporal_address is None
    assert (settings.temporal_tls, settings.temporal_api_key, settings.temporal_tls_ca) == (
        None,
        None,
        None,
    )
    assert not settings.temporal_tls_on
    assert connect_arguments(settings) == {"namespace": "default", "tls": False}
    assert transport(settings) == "plain TCP, no TLS"


def test_temporal_address_and_namespace_are_honoured() -> None:
    settings = Settings.from_env(
        {"TEMPORAL_ADDRESS": "temporal.internal:7233", "TEMPORAL_NAMESPACE": "billing"}
    )
    assert settings.temporal_address == "temporal.internal:7233"
    assert settings.namespace == "billing"


def test_each_forge_variable_overrides_its_temporal_counterpart(
    certs: LocalCertificates, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    other_ca = tmp_path / "other"
    other_ca.mkdir()
    settings = Settings.from_env(
        {
            "TEMPORAL_ADDRESS": "temporal.internal:7233",
            "FORGE_TEMPORAL_ADDRESS": "temporal.internal:7233",
            "TEMPORAL_NAMESPACE": "billing",
            "FORGE_NAMESPACE": "forge-prod",
            "TEMPORAL_API_KEY": "temporal-key",
            "FORGE_TEMPORAL_API_KEY": "forge-key",
            "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
            "FORGE_TEMPORAL_TLS_SERVER_NAME": "edge.internal",
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(
                make_certificates(other_ca, ["x"]).ca_file(other_ca)
            ),
            "FORGE_TEMPORAL_TLS_CA": str(certs.ca_file(tmp_path)),
            # Not overridden: the field keeps Temporal's value.
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(pair[0]),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(pair[1]),
        }
    )
    assert settings.temporal_address == "temporal.internal:7233"
    assert settings.namespace == "forge-prod"
    assert settings.temporal_api_key is not None
    assert settings.temporal_api_key.get_secret_value() == "forge-key"
    assert settings.temporal_tls_server_name == "edge.internal"
    assert settings.temporal_tls_ca == tmp_path / "ca.pem"
    assert (settings.temporal_tls_cert, settings.temporal_tls_key) == pair


def test_a_toml_profile_is_honoured_and_forge_variables_override_it(
    certs: LocalCertificates, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    ca = certs.ca_file(tmp_path)
    path = write_profile(
        tmp_path,
        f"""
[profile.default]
address = "default.internal:7233"

[profile.prod]
address = "prod.tmprl.cloud:7233"
namespace = "prod.a1b2c"
api_key = "profile-key"
[profile.prod.tls]
server_name = "prod.tmprl.cloud"
server_ca_cert_path = "{ca}"
client_cert_path = "{pair[0]}"
client_key_path = "{pair[1]}"
""",
    )
    env = {"TEMPORAL_CONFIG_FILE": str(path), "TEMPORAL_PROFILE": "prod"}
    settings = Settings.from_env(env)
    assert settings.temporal_address == "prod.tmprl.cloud:7233"
    assert settings.namespace == "prod.a1b2c"
    assert settings.temporal_api_key is not None
    assert settings.temporal_api_key.get_secret_value() == "profile-key"
    assert (settings.temporal_tls_ca, settings.temporal_tls_cert) == (ca, pair[0])
    assert settings.temporal_tls_server_name == "prod.tmprl.cloud"

    arguments = connect_arguments(settings)
    assert arguments["api_key"] == "profile-key" and arguments["namespace"] == "prod.a1b2c"
    tls = arguments["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.server_root_ca_cert == ca.read_bytes()
    assert tls.client_cert == pair[0].read_bytes()
    assert tls.client_private_key == pair[1].read_bytes()
    assert tls.domain == "prod.tmprl.cloud"

    # TEMPORAL_* variables override the file, and FORGE_* both.
    assert Settings.from_env({**env, "TEMPORAL_NAMESPACE": "ns2"}).namespace == "ns2"
    overridden = Settings.from_env(
        {**env, "TEMPORAL_ADDRESS": "env.internal:7233", "FORGE_TEMPORAL_ADDRESS": "f:7233"}
    )
    assert overridden.temporal_address == "f:7233"
    assert Settings.from_env({"TEMPORAL_CONFIG_FILE": str(path)}).temporal_address == (
        "default.internal:7233"
    )


async def test_a_temporal_address_starts_no_embedded_server(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"FORGE_HOME": str(tmp_path / "home"), "TEMPORAL_ADDRESS": "temporal.example:7233"}
    )
    assert await ensure_address(settings) == "temporal.example:7233"
    with pytest.raises(DevServerError, match="FORGE_TEMPORAL_ADDRESS"):
        await DevServer().up(settings)
    assert not settings.home.exists()


def test_an_api_key_implies_tls_unless_tls_is_turned_off() -> None:
    at = {"FORGE_TEMPORAL_ADDRESS": "ns.tmprl.cloud:7233"}
    keyed = Settings.from_env({**at, "FORGE_TEMPORAL_API_KEY": "k-123"})
    assert keyed.temporal_tls_on
    assert connect_arguments(keyed)["tls"] == TLSConfig()
    assert transport(keyed) == "TLS with system CAs and an API key"
    plain = Settings.from_env({**at, "FORGE_TEMPORAL_API_KEY": "k-123", "FORGE_TEMPORAL_TLS": "0"})
    assert not plain.temporal_tls_on
    assert connect_arguments(plain) == {"namespace": "default", "tls": False, "api_key": "k-123"}
    # Temporal's own switch counts too, and FORGE_TEMPORAL_TLS wins over it.
    env = {
        "TEMPORAL_ADDRESS": "ns.tmprl.cloud:7233",
        "TEMPORAL_API_KEY": "k-123",
        "TEMPORAL_TLS": "false",
    }
    assert not Settings.from_env(env).temporal_tls_on
    assert Settings.from_env({**env, "FORGE_TEMPORAL_TLS": "true"}).temporal_tls_on


def test_the_api_key_never_shows(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"FORGE_TEMPORAL_ADDRESS": "a:7233", "FORGE_TEMPORAL_API_KEY": "sk-very-secret-1"}
    )
    assert "sk-very-secret-1" not in repr(settings)
    assert "sk-very-secret-1" not in str(settings.model_dump())
    assert "sk-very-secret-1" not in transport(settings)
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_TEMPORAL_API_KEY": "sk-very secret"})
    assert "sk-very" not in str(caught.value)
    assert "FORGE_TEMPORAL_API_KEY" in str(caught.value)


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ("FORGE_TEMPORAL_TLS_CERT", "FORGE_TEMPORAL_TLS_KEY"),
        ("FORGE_TEMPORAL_TLS_KEY", "FORGE_TEMPORAL_TLS_CERT"),
    ],
)
def test_a_client_certificate_without_its_key_names_both_variables(
    pair: tuple[Path, Path], given: str, missing: str
) -> None:
    path = pair[0] if given.endswith("CERT") else pair[1]
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_TEMPORAL_ADDRESS": "a:7233", given: str(path)})
    message = str(caught.value)
    assert message.startswith(f"{given}=")
    assert "FORGE_TEMPORAL_TLS_CERT" in message and "FORGE_TEMPORAL_TLS_KEY" in message
    assert "set together: mutual TLS needs both" in message
    assert f"set {missing} (or TEMPORAL_TLS_CLIENT_" in message


def test_a_certificate_and_a_key_that_do_not_match_are_refused(
    certs: LocalCertificates, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    other = certs.issue_client(tmp_path, "someone-else")
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(
            {"FORGE_TEMPORAL_TLS_CERT": str(pair[0]), "TEMPORAL_TLS_CLIENT_KEY_PATH": str(other[1])}
        )
    message = str(caught.value)
    assert message.startswith("FORGE_TEMPORAL_TLS_CERT=")
    assert (
        f"matches the unencrypted private key in TEMPORAL_TLS_CLIENT_KEY_PATH ({other[1]})"
        in message
    )


@pytest.mark.parametrize(
    ("variable", "content", "expected"),
    [
        ("FORGE_TEMPORAL_TLS_CA", None, "readable PEM file"),
        ("FORGE_TEMPORAL_TLS_CA", "not a certificate", "readable PEM file"),
        (
            "FORGE_TEMPORAL_TLS_CA",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "CA certificates that parse",
        ),
        ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", None, "readable PEM file"),
        ("FORGE_TEMPORAL_TLS_CERT", None, "client certificate"),
        ("TEMPORAL_TLS_CLIENT_KEY_PATH", "plain text", "private key"),
    ],
)
def test_an_unusable_tls_file_names_its_variable(
    tmp_path: Path, variable: str, content: str | None, expected: str
) -> None:
    path = tmp_path / "file.pem"
    if content is not None:
        path.write_text(content, encoding="ascii")
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: str(path)})
    assert str(caught.value).startswith(f"{variable}={str(path)!r} is invalid")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("env", "named", "expected"),
    [
        ({"FORGE_TEMPORAL_TLS": "maybe"}, "FORGE_TEMPORAL_TLS", "true or false"),
        ({"FORGE_TEMPORAL_CONNECT_TIMEOUT": "0"}, "FORGE_TEMPORAL_CONNECT_TIMEOUT", "above 0"),
        ({"FORGE_TEMPORAL_CONNECT_TIMEOUT": "soon"}, "FORGE_TEMPORAL_CONNECT_TIMEOUT", "seconds"),
        ({"FORGE_TEMPORAL_TLS_SERVER_NAME": "a b"}, "FORGE_TEMPORAL_TLS_SERVER_NAME", "host name"),
        ({"TEMPORAL_ADDRESS": "no-port"}, "TEMPORAL_ADDRESS", "host:port"),
        ({"TEMPORAL_NAMESPACE": "has space"}, "TEMPORAL_NAMESPACE", "namespace name"),
        (
            {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_TLS_CLIENT_CERT_DATA": "not a certificate"},
            "TEMPORAL_TLS_CLIENT_CERT_DATA",
            "a PEM client certificate",
        ),
        (
            {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_TLS_SERVER_CA_CERT_DATA": "junk"},
            "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
            "PEM CA certificate",
        ),
        (
            {"TEMPORAL_ADDRESS": "h:7233", "TEMPORAL_TLS_CLIENT_CERT_DATA": CERT_TEXT},
            "TEMPORAL_TLS_CLIENT_CERT_DATA",
            "TEMPORAL_TLS_CLIENT_KEY_PATH",
        ),
        ({"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml"}, "TEMPORAL_CONFIG_FILE", "TOML"),
    ],
)
def test_invalid_values_name_their_variable(env: dict[str, str], named: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env)
    assert str(caught.value).startswith(f"{named}=")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "shown"),
    [("FORGE_TEMPORAL_API_KEY", "'***'"), ("TEMPORAL_API_KEY", "'***'")],
)
def test_an_api_key_without_an_address_is_a_slip(variable: str, shown: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: "k-secret-9"})
    message = str(caught.value)
    assert message.startswith(f"{variable}={shown} is invalid")
    assert "FORGE_TEMPORAL_ADDRESS (or TEMPORAL_ADDRESS)" in message
    assert "k-secret-9" not in message


def test_tls_off_with_a_tls_file_set_is_a_contradiction(
    certs: LocalCertificates, tmp_path: Path
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(
            {
                "TEMPORAL_ADDRESS": "a:7233",
                "TEMPORAL_TLS": "false",
                "FORGE_TEMPORAL_TLS_CA": str(certs.ca_file(tmp_path)),
            }
        )
    message = str(caught.value)
    assert message.startswith("TEMPORAL_TLS='false' is invalid")
    assert "FORGE_TEMPORAL_TLS_CA unset" in message


def test_the_configuration_page_has_a_row_for_every_temporal_variable() -> None:
    from workers.settings import ENV_VARS
    from workers.settings_temporal import TEMPORAL_ENV_VARS, TEMPORAL_EQUIVALENTS

    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page.split("## Reaching Temporal", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for field in (*TEMPORAL_ENV_VARS, "temporal_address", "namespace"):
        row = next((r for r in rows if r.startswith(f"| `{ENV_VARS[field]}` |")), None)
        assert row is not None, f"docs/configuration.md has no row for {ENV_VARS[field]}"
        if field in TEMPORAL_EQUIVALENTS:
            assert f"`{TEMPORAL_EQUIVALENTS[field]}`" in row
