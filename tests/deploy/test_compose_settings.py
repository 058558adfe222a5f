"""The Forge services of docker-compose.yml and `forge dev up` speak the same settings."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.deploy import compose
from workers.process import locals3
from workers.settings import ENV_VARS, Settings

_SETTINGS_VARS = frozenset(ENV_VARS.values())
# Read by boto3 itself (the S3 artifact store), the names `forge dev up --s3` sets.
_AWS_VARS = frozenset(locals3.CREDENTIALS)
# Read only by docker-compose.yml's ${...}: the stack's own secrets, no Forge process's.
_STACK_PREFIX = "STACK_"


@pytest.fixture(scope="module")
def stack() -> dict:
    return compose.load()


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return compose.read_env()


def _forge_env(stack: dict, env: dict[str, str], name: str) -> dict[str, str]:
    return compose.container_env(compose.forge_services(stack)[name], env)


def test_every_variable_a_forge_service_gets_is_read(stack: dict, env: dict[str, str]) -> None:
    text = compose.COMPOSE.read_text()
    interpolated = {m["name"] for m in compose.interpolations(text)}
    services = compose.forge_services(stack)
    assert {"api", "worker", "forge-migrate"} <= set(services)
    for name in services:
        for variable in _forge_env(stack, env, name):
            if variable.startswith(_STACK_PREFIX):
                assert variable in interpolated, f"{variable} is used by nothing"
            else:
                assert variable in _SETTINGS_VARS | _AWS_VARS, (
                    f"{name}: {variable} is read by no Forge setting (workers/settings.py)"
                )
            # Temporal's envconfig would read a TEMPORAL_* variable over FORGE_*'s defaults.
            assert not variable.startswith("TEMPORAL_"), f"{name}: {variable}"


def test_every_setting_this_topology_needs_is_set(stack: dict, env: dict[str, str]) -> None:
    for name in ("api", "worker", "forge-migrate"):
        settings = Settings.from_env(_forge_env(stack, env, name))
        assert settings.temporal_address == "temporal:7233"
        assert settings.database_url.startswith("postgresql+psycopg://forge_app:")
        assert settings.database_owner_url is not None
        assert settings.database_owner_url.startswith("postgresql+psycopg://forge_owner:")
        assert settings.artifacts_url.startswith("s3://")
        assert settings.s3_endpoint == "http://minio:9000"
        # Shared by the API and every worker: generated per container it would differ.
        assert settings.webhook_signing_key is not None
        assert settings.home == Path("/var/lib/forge")


def test_services_reach_each_other_by_service_name(stack: dict, env: dict[str, str]) -> None:
    services = set(stack["services"])
    settings = Settings.from_env(_forge_env(stack, env, "worker"))
    hosts = {
        (settings.temporal_address or "").split(":")[0],
        settings.database_url.split("@")[1].split(":")[0],
        (settings.s3_endpoint or "").split("//")[1].split(":")[0],
    }
    assert hosts <= services, f"not a service of docker-compose.yml: {hosts - services}"


def _topology_variables() -> set[str]:
    """The names `forge dev up` sets for its processes: ENV_VARS["field"] in topology.py."""
    source = Path(compose.ROOT / "workers" / "process" / "topology.py").read_text()
    fields = {
        node.slice.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ENV_VARS"
        and isinstance(node.slice, ast.Constant)
    }
    return {ENV_VARS[f] for f in fields} | set(locals3.CREDENTIALS)


def test_the_topology_sets_the_names_compose_sets(stack: dict, env: dict[str, str]) -> None:
    topology = _topology_variables()
    # What `forge dev up --postgres --s3` gives its workers and API (see its _start_*).
    assert {"FORGE_TEMPORAL_ADDRESS", "FORGE_DATABASE_OWNER_URL", "FORGE_S3_ENDPOINT"} <= topology
    for name in ("api", "worker"):
        missing = topology - set(_forge_env(stack, env, name))
        # deployment_name/build_id are refused by `forge dev up`, not set.
        missing -= {ENV_VARS["deployment_name"], ENV_VARS["build_id"]}
        # FORGE_METRICS_PORT is only turned into 0 when the operator set it (one port per
        # process on one host), never set by `up` itself; compose leaves it unset too.
        missing -= {ENV_VARS["metrics_port"]}
        assert missing == set(), f"{name} lacks what the topology sets: {sorted(missing)}"
