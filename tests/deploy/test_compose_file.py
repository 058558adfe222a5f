"""docker-compose.yml: valid Compose, ordered start, free ports, pinned images, no secrets."""

from __future__ import annotations

import re
import tomllib

import jsonschema
import pytest
from dockerfile_parse import DockerfileParser

from tests.deploy import compose
from tests.deploy.pin_rows import lock_rows

# An exact version: MAJOR.MINOR.PATCH (suffixes allowed); PostgreSQL's releases are
# MAJOR.MINOR since 10 (16.10 is one release, 16 floats); MinIO's are RELEASE.<timestamp>.
_SEMVER = r"v?\d+\.\d+\.\d+[-.A-Za-z0-9]*"
_EXACT_TAG = {
    "postgres": re.compile(r"\d+\.\d+"),
    "minio/minio": re.compile(r"RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ"),
    "minio/mc": re.compile(r"RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ"),
}
_URL_PASSWORD = re.compile(r"://[^/\s:@]+:[^@\s]+@")
_SECRET_NAME = re.compile(r"PASSWORD|PWD|SECRET|TOKEN|_KEY$|API_KEY", re.IGNORECASE)


@pytest.fixture(scope="module")
def stack() -> dict:
    return compose.load()


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return compose.read_env()


def test_the_file_validates_against_the_compose_specification(stack: dict) -> None:
    validator = jsonschema.Draft7Validator(compose.spec())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(stack)]
    assert errors == []


def test_the_schema_rejects_what_compose_rejects() -> None:
    # The copied schema is the real one: an unknown service key fails it.
    broken = {"services": {"api": {"image": "forge:0.1.0", "restart_policy": "always"}}}
    assert not jsonschema.Draft7Validator(compose.spec()).is_valid(broken)


def test_every_service_named_in_the_task_exists(stack: dict) -> None:
    services = stack["services"]
    assert {"temporal", "temporal-ui", "forge-postgres", "minio", "api", "worker"} <= set(services)
    forge = compose.forge_services(stack)
    commands = {name: svc.get("command") for name, svc in forge.items()}
    assert commands["api"][:2] == ["forge", "api"]
    assert commands["worker"] == ["forge", "worker"]
    assert ["forge", "db", "upgrade"] in commands.values()


def test_the_worker_scales(stack: dict) -> None:
    worker = stack["services"]["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker
    assert worker["stop_signal"] == "SIGINT"  # finishes in-flight tasks (forge worker)


def test_start_order_waits_on_health_and_completed_one_shots(stack: dict) -> None:
    services = stack["services"]
    one_shots = {n for n, s in services.items() if s.get("restart") == "no"}
    assert {"temporal-schema", "temporal-setup", "forge-migrate", "minio-bucket"} <= one_shots
    for name, svc in services.items():
        depends = svc.get("depends_on", {})
        assert isinstance(depends, dict), f"{name}: depends_on needs conditions"
        for dep, how in depends.items():
            if dep in one_shots:
                assert how["condition"] == "service_completed_successfully", (name, dep)
            else:
                assert how["condition"] == "service_healthy", (name, dep)
                assert "healthcheck" in services[dep], f"{name} waits on {dep}: no healthcheck"
    # The API and the workers start only once Temporal, the schema and the bucket are ready.
    for name in ("api", "worker"):
        assert {"temporal-setup", "forge-migrate", "minio-bucket"} <= set(
            services[name]["depends_on"]
        )


def test_state_lives_in_named_volumes(stack: dict) -> None:
    named = set(stack["volumes"])
    for name in ("temporal-postgres", "forge-postgres", "minio"):
        mounts = stack["services"][name]["volumes"]
        sources = {m.split(":", 1)[0] for m in mounts}
        assert sources & named, f"{name} keeps its data outside a named volume: {mounts}"


def _host_ports(stack: dict) -> list[tuple[str, str, str]]:
    found = []
    for name, svc in stack["services"].items():
        for port in svc.get("ports", []):
            parts = str(port).split(":")
            assert len(parts) == 3, f"{name}: publish as HOST_IP:HOST_PORT:PORT, got {port}"
            found.append((name, parts[0], parts[1]))
    return found


def test_host_ports_do_not_collide(stack: dict) -> None:
    ports = _host_ports(stack)
    taken: dict[tuple[str, str], str] = {}
    for name, ip, port in ports:
        key = ("*" if ip in ("0.0.0.0", "") else ip, port)
        assert key not in taken, f"{name} and {taken[key]} both publish {ip}:{port}"
        taken[key] = name
    assert len(ports) >= 3  # Temporal, its UI, the API at least


def test_every_image_has_an_exact_tag_and_a_lock_entry(stack: dict) -> None:
    locked = dict(lock_rows())
    used = set()
    for name, svc in stack["services"].items():
        image = compose.interpolate(svc["image"], {})
        repo, sep, tag = image.rpartition(":")
        exact = _EXACT_TAG.get(repo, re.compile(_SEMVER))
        assert sep and exact.fullmatch(tag), f"{name}: {image} has no exact version tag"
        assert image in locked, f"{name}: {image} is missing from deploy/images.lock"
        used.add(image)
    # deploy/Dockerfile's base (tests/deploy/test_dockerfile.py checks its tag).
    used |= set(DockerfileParser(path=str(compose.ROOT / "deploy" / "Dockerfile")).parent_images)
    assert set(locked) == used, f"stale entries in deploy/images.lock: {set(locked) - used}"


def test_the_forge_image_defaults_to_the_project_version(stack: dict) -> None:
    version = tomllib.loads((compose.ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert compose.interpolate(stack["services"]["api"]["image"], {}) == f"forge:{version}"


def test_no_secret_literal_in_the_file(stack: dict) -> None:
    for name, svc in stack["services"].items():
        for key, value in compose.environment(svc).items():
            if _SECRET_NAME.search(key):
                matches = compose.interpolations(value)
                assert matches and all(m["op"] == ":?" for m in matches), (
                    f"{name}: {key} must come from the env file as ${{VAR:?message}}"
                )
    secrets = {v for k, v in compose.read_env().items() if _SECRET_NAME.search(k)}
    secrets |= {v for k, v in compose.read_env().items() if "CHANGE-ME" in v}
    for value in _strings(stack):
        assert _URL_PASSWORD.search(value) is None, f"a URL with a password: {value}"
        assert not any(s in value for s in secrets), f"a secret of the env file: {value}"


def _strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return [node] if isinstance(node, str) else []


def test_required_interpolations_are_in_the_env_file(stack: dict, env: dict[str, str]) -> None:
    text = compose.COMPOSE.read_text()
    required = {m["name"] for m in compose.interpolations(text) if m["op"] in (":?", "?")}
    assert required, "no secret is interpolated"
    assert required <= set(env), f"not in deploy/forge.env.example: {required - set(env)}"
