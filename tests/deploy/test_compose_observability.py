"""docker-compose.yml's `observability` profile: Collector, Jaeger, Prometheus, and their wiring.

No Docker engine here: the configs are read as each tool reads them (YAML), and every
reference between them (pipelines to components, OTLP endpoint to receiver, scrape target to
service and port) is checked against what actually defines it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy import compose
from workers.settings import Settings

PROFILE = "observability"
OBSERVABILITY_ENV = compose.ROOT / "deploy" / "observability.env"
COLLECTOR = compose.ROOT / "deploy" / "observability" / "collector.yaml"
PROMETHEUS = compose.ROOT / "deploy" / "observability" / "prometheus.yml"


@pytest.fixture(scope="module")
def stack() -> dict:
    return compose.load()


@pytest.fixture(scope="module")
def collector() -> dict[str, Any]:
    return yaml.safe_load(COLLECTOR.read_text())


@pytest.fixture(scope="module")
def prometheus() -> dict[str, Any]:
    return yaml.safe_load(PROMETHEUS.read_text())


def _settings(stack: dict, name: str, *env_files: Path) -> Settings:
    """A Forge service's Settings when compose runs with these --env-file files."""
    env: dict[str, str] = {}
    for path in env_files:
        env.update(compose.read_env(path))
    return Settings.from_env(compose.container_env(compose.forge_services(stack)[name], env))


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def test_the_profile_holds_the_collector_jaeger_and_prometheus_only(stack: dict) -> None:
    profiled = {n for n, s in stack["services"].items() if s.get("profiles")}
    assert profiled == {"otel-collector", "jaeger", "prometheus"}
    assert all(stack["services"][n]["profiles"] == [PROFILE] for n in profiled)
    images = {n: stack["services"][n]["image"].rsplit(":", 1)[0] for n in profiled}
    assert images == {
        "otel-collector": "otel/opentelemetry-collector-contrib",
        "jaeger": "jaegertracing/jaeger",
        "prometheus": "prom/prometheus",
    }


def test_each_mounted_config_is_a_file_of_the_repository(stack: dict) -> None:
    mounted = {}
    for name in ("otel-collector", "prometheus"):
        for mount in stack["services"][name]["volumes"]:
            source, target = mount.split(":")[:2]
            if source.startswith("./"):
                assert (compose.ROOT / source).is_file(), f"{name}: {source} is missing"
                mounted[name] = (compose.ROOT / source, target)
    assert mounted["otel-collector"][0] == COLLECTOR
    assert stack["services"]["otel-collector"]["command"] == [
        f"--config={mounted['otel-collector'][1]}"
    ]
    assert mounted["prometheus"][0] == PROMETHEUS
    assert f"--config.file={mounted['prometheus'][1]}" in stack["services"]["prometheus"]["command"]


def test_without_the_profiles_env_file_forge_records_nothing(stack: dict) -> None:
    for name in ("api", "worker"):
        settings = _settings(stack, name, compose.ENV_EXAMPLE)
        assert settings.telemetry == "off" and settings.metrics_port is None


def test_the_env_file_turns_on_the_profile_and_points_forge_at_the_collector(
    stack: dict, collector: dict
) -> None:
    assert compose.read_env(OBSERVABILITY_ENV)["COMPOSE_PROFILES"] == PROFILE
    http = collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    for name in ("api", "worker"):
        settings = _settings(stack, name, compose.ENV_EXAMPLE, OBSERVABILITY_ENV)
        assert settings.telemetry == "otlp"
        assert settings.otel_protocol == "http/protobuf"  # the receiver's http protocol
        target = urlsplit(settings.otel_endpoint or "")
        assert target.hostname == "otel-collector"
        assert target.port == _port(http)
        assert settings.metrics_port is not None and settings.metrics_address == "0.0.0.0"
    # The host's port of the Collector (`forge run` outside the stack) is its OTLP/HTTP one.
    assert "127.0.0.1:4318:" + str(_port(http)) in stack["services"]["otel-collector"]["ports"]


def test_the_collectors_pipelines_use_only_what_it_defines_and_all_of_it(collector: dict) -> None:
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    pipelines = collector["service"]["pipelines"]
    assert set(pipelines) == {"traces", "metrics"}
    for name, pipeline in pipelines.items():
        for kind, names in used.items():
            listed = pipeline.get(kind, [])
            missing = set(listed) - set(collector.get(kind) or {})
            assert not missing, f"pipeline {name}: {kind} {missing} are not defined"
            names.update(listed)
        # The memory limiter protects only if it runs first.
        assert pipeline["processors"][0] == "memory_limiter"
    for kind, names in used.items():
        assert names == set(collector[kind]), f"{kind} defined but unused"
    assert set(collector["service"]["extensions"]) == set(collector["extensions"])
    for protocol in collector["receivers"]["otlp"]["protocols"].values():
        assert protocol["endpoint"].startswith("0.0.0.0:")  # reachable from other containers


def test_traces_go_to_the_jaeger_service_and_metrics_to_prometheus(
    stack: dict, collector: dict
) -> None:
    (traces,) = collector["service"]["pipelines"]["traces"]["exporters"]
    host, port = collector["exporters"][traces]["endpoint"].split(":")
    assert host == "jaeger" and PROFILE in stack["services"][host]["profiles"]
    assert port == "4317"  # Jaeger v2's OTLP/gRPC receiver (its default configuration)
    assert collector["exporters"][traces]["tls"]["insecure"] is True
    (metrics,) = collector["service"]["pipelines"]["metrics"]["exporters"]
    assert metrics == "prometheus"


def _targets(job: dict) -> list[tuple[str, int]]:
    found = []
    for static in job.get("static_configs", []):
        for target in static["targets"]:
            host, port = target.split(":")
            found.append((host, int(port)))
    for dns in job.get("dns_sd_configs", []):
        found.extend((name, int(dns["port"])) for name in dns["names"])
    return found


def test_prometheus_scrapes_real_services_on_the_ports_they_serve(
    stack: dict, collector: dict, prometheus: dict
) -> None:
    services = stack["services"]
    serving = {"otel-collector": _port(collector["exporters"]["prometheus"]["endpoint"])}
    for name in ("api", "worker"):
        port = _settings(stack, name, compose.ENV_EXAMPLE, OBSERVABILITY_ENV).metrics_port
        assert port  # a fixed port: Prometheus cannot discover port 0
        serving[name] = port
    scraped: dict[str, int] = {}
    for job in prometheus["scrape_configs"]:
        targets = _targets(job)
        assert targets, f"job {job['job_name']} scrapes nothing"
        for host, port in targets:
            assert host in services, f"job {job['job_name']}: {host} is no compose service"
            assert serving.get(host) == port, f"{host} serves /metrics on {serving.get(host)}"
            scraped[host] = port
    # Every long-running Forge service and the Collector are scraped, and nothing else.
    long_running = {n for n, s in compose.forge_services(stack).items() if s.get("restart") != "no"}
    assert set(scraped) == long_running | {"otel-collector"}
    # The workers scale: found by the service name, every replica, not one fixed container.
    (worker_job,) = [j for j in prometheus["scrape_configs"] if ("worker", 9464) in _targets(j)]
    assert worker_job["dns_sd_configs"][0]["type"] == "A"
