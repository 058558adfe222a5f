"""deploy/kubernetes/: valid Kubernetes objects, the settings Forge reads, no secret values."""

from __future__ import annotations

import re
import tomllib

import kubernetes_validate
import pytest
import yaml

from tests.deploy import compose, kubernetes
from workers.process import locals3
from workers.settings import ENV_VARS, Settings

# The oldest release the manifests are for: user namespaces (hostUsers: false) and
# procMount: Unmasked are on by default from 1.33.
K8S_VERSION = "1.33.0"
VERSION = tomllib.loads((compose.ROOT / "pyproject.toml").read_text())["project"]["version"]
_READ = frozenset(ENV_VARS.values()) | frozenset(locals3.CREDENTIALS)
_SECRET_NAMES = re.compile(r"SECRET|PASSWORD|_KEY$|API_KEY|DATABASE.*URL")


def test_the_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load(kubernetes.KUSTOMIZATION.read_text())["resources"]
    on_disk = {p.name for p in kubernetes.MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(listed) == on_disk


@pytest.mark.parametrize("index", range(len(kubernetes.documents())))
def test_each_object_validates_against_the_kubernetes_schema(index: int) -> None:
    path, doc = kubernetes.documents()[index]
    # strict: a field the schema does not know (a typo, a field of a later release) fails too.
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "forge", path


def test_every_variable_a_container_gets_is_one_forge_reads() -> None:
    assert kubernetes.secret_example(), "the Secret example names no variable"
    names = set(kubernetes.config()) | set(kubernetes.secret_example())
    for _, container in kubernetes.containers():
        names |= {e["name"] for e in container.get("env", ())}
    unread = names - _READ
    assert not unread, f"read by no Forge setting (workers/settings.py): {sorted(unread)}"


def test_shared_variables_have_the_env_files_values() -> None:
    example = compose.read_env()
    ours = kubernetes.config() | compose.read_env(kubernetes.SECRETS_EXAMPLE)
    shared = set(ours) & set(example)
    assert {"FORGE_TEMPORAL_ADDRESS", "FORGE_DATABASE_URL", "FORGE_ARTIFACTS_URL"} <= shared
    for name in shared:
        assert ours[name] == example[name], f"{name}: {ours[name]!r} != {example[name]!r}"


def test_every_container_reads_valid_settings() -> None:
    for workload, container in kubernetes.containers():
        env = kubernetes.container_env(container)
        settings = Settings.from_env(env)  # raises, naming the variable, when one is invalid
        assert settings.temporal_address == "temporal:7233", workload
        assert settings.database_url.startswith("postgresql+psycopg://forge_app:"), workload
        assert settings.deployment_name == "forge", workload
    migrate = next(c for w, c in kubernetes.containers() if w == "forge-migrate")
    assert migrate["command"] == ["forge", "db", "upgrade"]
    owner = Settings.from_env(kubernetes.container_env(migrate)).database_owner_url
    assert owner is not None and owner.startswith("postgresql+psycopg://forge_owner:")


def test_images_are_pinned_to_this_release_and_builds_named_by_it() -> None:
    for workload, container in kubernetes.containers():
        assert container["image"] == f"forge:{VERSION}", workload
        build = {e["name"]: e["value"] for e in container.get("env", ())}.get("FORGE_BUILD_ID")
        assert build in (None, VERSION), f"{workload}: FORGE_BUILD_ID {build} is not the tag"
    # One Deployment per build, so the next build's starts beside it (an upgrade).
    worker = kubernetes.named("Deployment", f"forge-worker-{VERSION.replace('.', '-')}")
    assert worker["spec"]["selector"]["matchLabels"]["app.kubernetes.io/version"] == VERSION
    [container] = worker["spec"]["template"]["spec"]["containers"]
    assert {"name": "FORGE_BUILD_ID", "value": VERSION} in container["env"]


def test_no_secret_value_is_in_the_manifests() -> None:
    assert not [d for _, d in kubernetes.documents() if d["kind"] == "Secret"]
    assert not _SECRET_NAMES.search(" ".join(kubernetes.config())), kubernetes.config()
    for workload, container in kubernetes.containers():
        literal = [e["name"] for e in container.get("env", ()) if _SECRET_NAMES.search(e["name"])]
        assert not literal, f"{workload}: {literal} set in the manifest, not from the Secret"
        assert {"secretRef": {"name": kubernetes.SECRET_NAME}} in container["envFrom"], workload
    for name, value in kubernetes.secret_example().items():
        if _SECRET_NAMES.search(name):
            assert "CHANGE-ME" in value, f"secrets.env.example: {name} holds a value"


def test_the_worker_pod_can_run_bubblewrap_unprivileged() -> None:
    for name in (f"forge-worker-{VERSION.replace('.', '-')}", "forge-doctor"):
        spec = dict(kubernetes.pod_specs())[name]
        pod = spec["securityContext"]
        [container] = spec["containers"]
        own = container["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 10001, name
        assert own["allowPrivilegeEscalation"] is False, name
        assert own["capabilities"] == {"drop": ["ALL"]}, name
        assert "privileged" not in own, name
        assert pod["seccompProfile"]["type"] in ("Unconfined", "Localhost"), name
        assert pod["appArmorProfile"]["type"] in ("Unconfined", "Localhost"), name
        # A fresh /proc inside the sandbox needs an unmasked one, which needs a user namespace.
        assert own["procMount"] == "Unmasked" and spec["hostUsers"] is False, name


def test_the_api_is_probed_on_its_health_endpoint(tmp_path) -> None:
    from workers.api.app import create_app

    paths = {getattr(r, "path", None) for r in create_app(Settings(home=tmp_path)).routes}
    deployment = kubernetes.named("Deployment", "forge-api")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] in paths
        assert container[probe]["httpGet"]["port"] == "http"
    [port] = container["ports"]
    assert container["command"][-1] == str(port["containerPort"])
    service = kubernetes.named("Service", "forge-api")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_every_container_has_requests_and_limits() -> None:
    for workload, container in kubernetes.containers():
        for kind in ("requests", "limits"):
            assert set(container["resources"][kind]) == {"cpu", "memory"}, workload


def test_a_worker_is_given_longer_to_drain_than_compose_gives_it() -> None:
    worker = kubernetes.named("Deployment", f"forge-worker-{VERSION.replace('.', '-')}")
    spec = worker["spec"]["template"]["spec"]
    stop = compose.load()["services"]["worker"]["stop_grace_period"]
    assert spec["terminationGracePeriodSeconds"] >= int(stop.removesuffix("s"))
    # Kubernetes sends SIGTERM; `forge worker` drains on SIGINT, which preStop sends first.
    hook = spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert hook[:2] == ["python", "-c"] and "os.kill(1, signal.SIGINT)" in hook[2]
    compile(hook[2], "preStop", "exec")  # the hook's program is valid Python


def test_workspaces_are_not_on_a_volume_the_worker_would_refuse() -> None:
    # An emptyDir is mode 0777 without the sticky bit: prepare_workspace_root refuses a
    # workspace root below it, so the root stays on the image's sticky /var/tmp (as in compose).
    root = kubernetes.config()["FORGE_WORKSPACE_ROOT"]
    assert root == compose.read_env()["FORGE_WORKSPACE_ROOT"]
    for workload, container in kubernetes.containers():
        for mount in container.get("volumeMounts", ()):
            below = root == mount["mountPath"] or root.startswith(mount["mountPath"] + "/")
            assert not below, f"{workload}: {root} is on volume {mount['name']}"


_SED = re.compile(r"'s/((?:[^/\\]|\\.)*)/((?:[^/\\]|\\.)*)/(g?)'")


def _as_upgraded(manifest: str) -> list[dict]:
    """`manifest` through the `sed` line docs/deploy-kubernetes.md's upgrade pipes it through."""
    page = (compose.ROOT / "docs" / "deploy-kubernetes.md").read_text()
    [line] = [x for x in page.splitlines() if x.startswith("sed ") and f"/{manifest} " in x]
    text = (kubernetes.MANIFESTS / manifest).read_text()
    for pattern, replacement, every in _SED.findall(line):
        text = re.sub(pattern, replacement.replace("\\", ""), text, count=0 if every else 1)
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_the_upgrades_next_build_is_a_second_deployment_beside_the_first() -> None:
    old = kubernetes.named("Deployment", f"forge-worker-{VERSION.replace('.', '-')}")
    [new] = _as_upgraded("worker.yaml")
    kubernetes_validate.validate(new, K8S_VERSION, strict=True)
    assert new["metadata"]["name"] != old["metadata"]["name"]
    # Selectors that overlap would make the two Deployments fight over each other's pods.
    assert new["spec"]["selector"] != old["spec"]["selector"]
    [container] = new["spec"]["template"]["spec"]["containers"]
    tag = container["image"].removeprefix("forge:")
    assert tag != VERSION and {"name": "FORGE_BUILD_ID", "value": tag} in container["env"]
    for job in ("migrate-job.yaml", "doctor-job.yaml"):
        [upgraded] = _as_upgraded(job)
        kubernetes_validate.validate(upgraded, K8S_VERSION, strict=True)
        [container] = upgraded["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"forge:{tag}", job
