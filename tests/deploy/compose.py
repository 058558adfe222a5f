"""Reading docker-compose.yml and its env file as Compose would, for the deploy tests.

compose-spec.json is the Compose Specification's JSON schema, copied unchanged from
/work/shared/reference/compose-spec.json (upstream: github.com/compose-spec/compose-spec,
schema/compose-spec.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / "deploy" / "forge.env.example"
LOCK = ROOT / "deploy" / "images.lock"
SPEC = Path(__file__).with_name("compose-spec.json")
# The env file compose names is the operator's copy of the example.
ENV_FILE = "deploy/forge.env"
FORGE_IMAGE = "forge:"

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?message}, ${VAR?message}
_INTERPOLATION = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
)


def load(path: Path = COMPOSE) -> dict[str, Any]:
    """The compose file as YAML gives it (anchors and merge keys resolved)."""
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def spec() -> dict[str, Any]:
    """The Compose Specification's JSON schema."""
    data = json.loads(SPEC.read_text())
    assert isinstance(data, dict)
    return data


def read_env(path: Path = ENV_EXAMPLE) -> dict[str, str]:
    """KEY=VALUE lines of an env file; comments and blank lines skipped."""
    env = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"{path}: not KEY=VALUE: {line!r}"
            env[key.strip()] = value
    return env


def interpolations(text: str) -> list[re.Match[str]]:
    """Every ${...} in `text`."""
    return list(_INTERPOLATION.finditer(text))


def interpolate(value: str, env: dict[str, str]) -> str:
    """`value` with ${...} replaced as Compose does from `env` (a missing required one fails)."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        found = env.get(name, "")
        if found or (op in ("-", "?") and name in env):
            return found
        if op and op.endswith("?"):
            raise AssertionError(f"${{{name}}} is required: {arg}")
        return arg or ""

    return _INTERPOLATION.sub(one, value)


def forge_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the forge image (API, workers, one-shots)."""
    return {
        name: svc
        for name, svc in compose["services"].items()
        if str(svc.get("image", "")).startswith(FORGE_IMAGE)
    }


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's own `environment:` as a mapping (list or mapping form)."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        return dict(item.partition("=")[::2] for item in raw)
    return {str(k): str(v) for k, v in raw.items()}


def env_files(service: dict[str, Any]) -> list[str]:
    """The env files a service names (string, list of strings or list of mappings)."""
    raw = service.get("env_file") or []
    items = [raw] if isinstance(raw, str) else raw
    return [item if isinstance(item, str) else item["path"] for item in items]


def container_env(service: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """What a service's container sees: its env files (the example for ENV_FILE), then
    `environment:`, interpolated from `env`."""
    seen: dict[str, str] = {}
    for name in env_files(service):
        assert name == ENV_FILE, f"env_file {name!r}: the one shared env file is {ENV_FILE}"
        seen.update(read_env())
    seen.update(environment(service))
    return {k: interpolate(v, env) for k, v in seen.items()}
