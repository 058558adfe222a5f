"""Reading how to reach Temporal: FORGE_TEMPORAL_* variables over Temporal's own configuration.

Temporal's environment configuration (`temporalio.envconfig`: TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, a TOML profile chosen by
TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE) gives each field a value first; a FORGE_* variable
replaces it, field by field. workers/settings.py calls `temporal_values` and the parsers here;
workers/services/temporal_connect.py turns the result into Client.connect arguments.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workers.settings_env import SettingsError, absolute

if TYPE_CHECKING:
    from temporalio.envconfig import ClientConfigProfile

__all__ = [
    "TEMPORAL_ENV_VARS",
    "TEMPORAL_EQUIVALENTS",
    "TEMPORAL_PARSERS",
    "check_client_pair",
    "check_temporal_values",
    "temporal_values",
]

# Settings field -> FORGE_* variable (merged into workers.settings.ENV_VARS).
TEMPORAL_ENV_VARS: Mapping[str, str] = {
    "temporal_tls": "FORGE_TEMPORAL_TLS",
    "temporal_tls_ca": "FORGE_TEMPORAL_TLS_CA",
    "temporal_tls_cert": "FORGE_TEMPORAL_TLS_CERT",
    "temporal_tls_key": "FORGE_TEMPORAL_TLS_KEY",
    "temporal_tls_server_name": "FORGE_TEMPORAL_TLS_SERVER_NAME",
    "temporal_api_key": "FORGE_TEMPORAL_API_KEY",
    "temporal_connect_timeout": "FORGE_TEMPORAL_CONNECT_TIMEOUT",
}

# Settings field -> the variable of Temporal's own configuration it falls back to.
TEMPORAL_EQUIVALENTS: Mapping[str, str] = {
    "temporal_address": "TEMPORAL_ADDRESS",
    "namespace": "TEMPORAL_NAMESPACE",
    "temporal_tls": "TEMPORAL_TLS",
    "temporal_tls_ca": "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    "temporal_tls_cert": "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "temporal_tls_key": "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "temporal_tls_server_name": "TEMPORAL_TLS_SERVER_NAME",
    "temporal_api_key": "TEMPORAL_API_KEY",
}

# Where the TOML profile keeps each file, to name it in an error.
_PROFILE_KEYS: Mapping[str, str] = {
    "temporal_tls_ca": "tls.server_ca_cert_path",
    "temporal_tls_cert": "tls.client_cert_path",
    "temporal_tls_key": "tls.client_key_path",
}
_CONFIG_FILE, _PROFILE = "TEMPORAL_CONFIG_FILE", "TEMPORAL_PROFILE"
TEMPORAL_FORGE_ADDRESS = "FORGE_TEMPORAL_ADDRESS"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _parse_flag(variable: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise SettingsError(variable, raw, "true or false (unset: TLS when a TLS file or API key is)")


def _parse_timeout(variable: str, raw: str) -> float:
    try:
        seconds = float(raw.strip())
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 600:
        raise SettingsError(variable, raw, "a number of seconds above 0 and at most 600, e.g. 10")
    return seconds


def _parse_server_name(variable: str, raw: str) -> str:
    value = raw.strip()
    if not value or any(c.isspace() or c in "/:" for c in value):
        raise SettingsError(variable, raw, "a host name the server's certificate names")
    return value


def _pem_file(variable: str, raw: str, what: str) -> Path:
    path = absolute(Path(raw.strip()))
    expected = f"the path of a readable PEM file holding {what}"
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        raise SettingsError(variable, raw, expected) from None
    if "-----BEGIN " not in text:
        raise SettingsError(variable, raw, expected)
    return path


def _parse_ca(variable: str, raw: str) -> Path:
    path = _pem_file(variable, raw, "the CA certificate(s) the server's certificate chains to")
    try:
        ssl.create_default_context(cadata=path.read_text(encoding="ascii"))
    except ssl.SSLError:
        raise SettingsError(variable, raw, "a PEM file of CA certificates that parse") from None
    return path


def _parse_cert(variable: str, raw: str) -> Path:
    return _pem_file(variable, raw, "the client certificate (-----BEGIN CERTIFICATE-----)")


def _parse_key(variable: str, raw: str) -> Path:
    return _pem_file(variable, raw, "the client certificate's unencrypted private key")


def _parse_api_key(variable: str, raw: str) -> Any:
    from pydantic import SecretStr

    value = raw.strip()
    if any(c.isspace() for c in value):
        # Never echo the key: the message ends up in logs.
        raise SettingsError(variable, "***", "an API key without whitespace")
    return SecretStr(value)


TEMPORAL_PARSERS: Mapping[str, Callable[[str, str], Any]] = {
    "temporal_tls": _parse_flag,
    "temporal_tls_ca": _parse_ca,
    "temporal_tls_cert": _parse_cert,
    "temporal_tls_key": _parse_key,
    "temporal_tls_server_name": _parse_server_name,
    "temporal_api_key": _parse_api_key,
    "temporal_connect_timeout": _parse_timeout,
}


def check_client_pair(cert: object, key: object, cert_var: str, key_var: str) -> None:
    """A client certificate needs its key and the key its certificate, and the two must match.

    Raises:
        SettingsError: one is set without the other, or they do not parse as a matching pair.
    """
    if cert is None and key is None:
        return
    if cert is None or key is None:
        given, missing = (cert_var, key_var) if cert is not None else (key_var, cert_var)
        raise SettingsError(
            given,
            str(cert) if isinstance(cert, Path) else "(set)" if cert is not None else str(key),
            f"{cert_var} and {key_var} set together: mutual TLS needs both; set {missing} "
            f"too, or unset {given}",
        )
    if not (isinstance(cert, Path) and isinstance(key, Path)):
        # Inline PEM: ssl loads a pair from files only, and a private key is never written to
        # disk to check it; a pair that does not match fails the first connection instead.
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        # A password callback, so an encrypted key fails here instead of prompting on a tty.
        context.load_cert_chain(cert, key, password=lambda: b"")
    except (ssl.SSLError, OSError):
        raise SettingsError(
            cert_var,
            str(cert),
            f"a PEM certificate that matches the unencrypted private key in {key_var} ({key})",
        ) from None


def check_temporal_values(values: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Checks across fields, once FORGE_* and Temporal's values are merged.

    Raises:
        SettingsError: a certificate without its key (or not matching it), TLS or an API key
            without an address, or TLS off with a TLS setting given; it names the variables.
    """
    check_client_pair(
        values.get("temporal_tls_cert"),
        values.get("temporal_tls_key"),
        _source("temporal_tls_cert", env),
        _source("temporal_tls_key", env),
    )
    if not values.get("temporal_address"):
        # The embedded dev server speaks plain TCP: TLS or a key without an address is a slip.
        for field in ("temporal_api_key", "temporal_tls_ca", "temporal_tls_cert"):
            if values.get(field) is not None and values.get("temporal_tls") is not False:
                raise SettingsError(
                    _source(field, env),
                    "***" if field == "temporal_api_key" else str(values[field]),
                    "unset, or FORGE_TEMPORAL_ADDRESS (or TEMPORAL_ADDRESS) set to the cluster it "
                    "is for: the embedded dev server takes no TLS and no API key",
                )
    if values.get("temporal_tls") is False:
        for field in ("temporal_tls_ca", "temporal_tls_cert", "temporal_tls_server_name"):
            if values.get(field) is not None:
                raise SettingsError(
                    _source("temporal_tls", env),
                    "false",
                    f"true, or {_source(field, env)} unset: TLS is off, yet it is set",
                )


def _source(field: str, env: Mapping[str, str]) -> str:
    # The variable a TLS value came from (both names when it is unset), for an error.
    forge, temporal = TEMPORAL_ENV_VARS[field], TEMPORAL_EQUIVALENTS[field]
    if env.get(forge, "").strip():
        return forge
    inline = temporal.replace("_PATH", "_DATA")
    for variable in (temporal, inline):
        if env.get(variable, "").strip():
            return variable
    return f"{forge} (or {temporal})"


def temporal_values(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings values from Temporal's own configuration: its variables and TOML profile.

    Empty when neither a TEMPORAL_* variable nor the default config file exists, so verbs
    that never reach Temporal do not load its configuration bridge.

    Raises:
        SettingsError: the profile cannot be loaded, or a value in it is unusable.
    """
    if not any(name.startswith("TEMPORAL_") for name in env) and not _default_file(env).is_file():
        return {}
    profile = _load_profile(env)
    values: dict[str, Any] = {}
    if profile.address:
        values["temporal_address"] = _checked("temporal_address", profile.address, env)
    if profile.namespace:
        values["namespace"] = _checked("namespace", profile.namespace, env)
    forge_address = env.get(TEMPORAL_FORGE_ADDRESS, "").strip()
    if forge_address and forge_address != (profile.address or "").strip():
        # Temporal's credentials are for Temporal's address: never sent to another one.
        return values
    if profile.api_key:
        label = _label("temporal_api_key", env)
        values["temporal_api_key"] = _parse_api_key(label, profile.api_key)
    tls = profile.tls
    if tls is not None:
        # As Temporal's own clients read it: a TLS section (or a TEMPORAL_TLS_* variable) turns
        # TLS on unless it says disabled.
        values["temporal_tls"] = tls.disabled is not True
        if tls.server_name:
            values["temporal_tls_server_name"] = _parse_server_name(
                _label("temporal_tls_server_name", env), tls.server_name
            )
        sources = {
            "temporal_tls_ca": tls.server_root_ca_cert,
            "temporal_tls_cert": tls.client_cert,
            "temporal_tls_key": tls.client_private_key,
        }
        for field, source in sources.items():
            if source is not None:
                values[field] = _file_source(field, source, env)
    return values


def _default_file(env: Mapping[str, str]) -> Path:
    # Where Temporal's configuration looks when TEMPORAL_CONFIG_FILE is unset (Linux).
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "temporalio" / "temporal.toml"


def _load_profile(env: Mapping[str, str]) -> ClientConfigProfile:
    from temporalio.envconfig import ClientConfigProfile

    name = env.get(_PROFILE) or None
    source = env.get(_CONFIG_FILE) or str(_default_file(env))
    if env.get(_CONFIG_FILE) and not Path(source).is_file():
        # Temporal's loader skips a missing file silently; a named one that is gone is a typo.
        raise SettingsError(_CONFIG_FILE, source, "the path of a Temporal TOML file")
    try:
        return ClientConfigProfile.load(name, override_env_vars=dict(env))
    # The bridge's ConfigError (no public name) is a RuntimeError; its text spans lines.
    except RuntimeError as exc:
        raise SettingsError(
            _PROFILE if name else _CONFIG_FILE,
            name or source,
            f"a Temporal client profile that loads from {source} ({_load_problem(str(exc))})",
        ) from None


def _load_problem(text: str) -> str:
    """Where the loader stopped, never the line it quotes: that line may hold an api_key."""
    at = re.search(r"line \d+, column \d+", text)
    if "TOML parse error" in text:
        return f"not valid TOML at {at.group(0)}" if at else "not valid TOML"
    if "not found" in text.lower():
        return "the profile is not in the file"
    return "it does not load; check it with `temporal config get`"


def _label(field: str, env: Mapping[str, str]) -> str:
    variable = TEMPORAL_EQUIVALENTS[field]
    if variable in env:
        return variable
    key = _PROFILE_KEYS.get(field, variable.removeprefix("TEMPORAL_").lower())
    profile = env.get(_PROFILE) or "default"
    source = env.get(_CONFIG_FILE) or str(_default_file(env))
    return f"{key} of Temporal profile {profile!r} in {source}"


def _checked(field: str, raw: str, env: Mapping[str, str]) -> Any:
    from workers.settings_env import PARSERS

    return PARSERS[field](_label(field, env), raw)


def _file_source(field: str, source: object, env: Mapping[str, str]) -> Any:
    """A TLS file's path (checked as its FORGE_* variable is), or its inline PEM.

    Inline PEM comes from TEMPORAL_TLS_*_DATA or a profile's `data = ...`: the CA and the
    certificate as bytes, the private key in a SecretBytes (never shown).
    """
    label = _label(field, env)
    if isinstance(source, Path):
        path: Path = TEMPORAL_PARSERS[field](label, str(source))
        return path
    # Temporal's loader gives inline PEM as text (`data = ...`) or bytes.
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)  # type: ignore[call-overload]
    data_var = TEMPORAL_EQUIVALENTS[field].replace("_PATH", "_DATA")
    where = data_var if data_var in env else label.replace("_path ", "_data ", 1)
    return _inline_pem(field, where, data)


_PEM_MARKERS: Mapping[str, tuple[str, str]] = {
    "temporal_tls_ca": ("-----BEGIN CERTIFICATE-----", "PEM CA certificate(s)"),
    "temporal_tls_cert": ("-----BEGIN CERTIFICATE-----", "a PEM client certificate"),
    "temporal_tls_key": ("PRIVATE KEY-----", "a PEM unencrypted private key"),
}


def _inline_pem(field: str, where: str, data: bytes) -> Any:
    from pydantic import SecretBytes

    marker, what = _PEM_MARKERS[field]
    secret = field == "temporal_tls_key"
    if marker.encode() not in data or b"ENCRYPTED" in data:
        # A key's text is never echoed, not even in part.
        raise SettingsError(where, "***" if secret else "(inline PEM)", what)
    if field == "temporal_tls_ca":
        try:
            ssl.create_default_context(cadata=data.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError):
            raise SettingsError(where, "(inline PEM)", "PEM CA certificates that parse") from None
    return SecretBytes(data) if secret else data
