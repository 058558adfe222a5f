"""Temporal's own client configuration as tests write it: a TOML profile file, inline PEM."""

from pathlib import Path

# Inline PEM as TEMPORAL_TLS_*_DATA carries it: Settings checks its form, the handshake the rest.
CERT_TEXT = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def write_profile(tmp_path: Path, text: str) -> Path:
    """A temporal.toml holding `text`, for TEMPORAL_CONFIG_FILE."""
    path = tmp_path / "temporal.toml"
    path.write_text(text, encoding="utf-8")
    return path
