"""deploy/kubernetes/ read as the tests need it: its documents, containers and their settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.compose import ROOT, read_env

MANIFESTS = ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = MANIFESTS / "kustomization.yaml"
SECRETS_EXAMPLE = MANIFESTS / "secrets.env.example"
SECRET_NAME = "forge-secrets"
CONFIG_NAME = "forge-config"


def documents() -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object the kustomization lists, with its file."""
    listed = yaml.safe_load(KUSTOMIZATION.read_text())["resources"]
    return [
        (MANIFESTS / name, doc)
        for name in listed
        for doc in yaml.safe_load_all((MANIFESTS / name).read_text())
        if doc is not None
    ]


def named(kind: str, name: str) -> dict[str, Any]:
    [found] = [d for _, d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    """(workload name, pod spec) of every Deployment and Job."""
    for _, doc in documents():
        if doc["kind"] in ("Deployment", "Job"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for workload, spec in pod_specs():
        for container in (*spec.get("initContainers", ()), *spec["containers"]):
            yield workload, container


def config() -> dict[str, str]:
    return dict(named("ConfigMap", CONFIG_NAME)["data"])


def secret_example() -> dict[str, str]:
    """The example's KEY=VALUE lines, commented-out ones (`# KEY=VALUE`) included."""
    lines = SECRETS_EXAMPLE.read_text().splitlines()
    uncommented = [x.removeprefix("# ") for x in lines if "=" in x and " " not in x.split("=")[0]]
    return {key: value for key, _, value in (x.partition("=") for x in uncommented)}


def container_env(container: dict[str, Any]) -> dict[str, str]:
    """What the container's process gets: the ConfigMap, the Secret example, then `env`."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", ()):
        if "configMapRef" in source:
            assert source["configMapRef"]["name"] == CONFIG_NAME, source
            env |= config()
        else:
            assert source["secretRef"]["name"] == SECRET_NAME, source
            env |= read_env(SECRETS_EXAMPLE)  # its uncommented lines, as the Secret is made
    env |= {e["name"]: e["value"] for e in container.get("env", ())}
    return env
