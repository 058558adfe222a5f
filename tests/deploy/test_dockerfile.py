"""deploy/Dockerfile, parsed by dockerfile-parse: stages, install.sh, a non-root user, pins."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser

from tests.deploy import compose
from tests.deploy.pin_rows import lock_rows

DOCKERFILE = compose.ROOT / "deploy" / "Dockerfile"
ROLES = {("forge", "worker"), ("forge", "api"), ("forge", "db"), ("forge", "doctor")}
_RUN_FLAG = re.compile(r"^(?:--[a-z-]+=\S+\s+)*")


@pytest.fixture(scope="module")
def parsed() -> DockerfileParser:
    return DockerfileParser(path=str(DOCKERFILE))


def _stages(parsed: DockerfileParser) -> list[list[dict[str, Any]]]:
    stages: list[list[dict[str, Any]]] = []
    for instruction in parsed.structure:
        if instruction["instruction"] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def test_it_is_multi_stage_and_the_final_stage_copies_the_prefix(parsed) -> None:
    stages = _stages(parsed)
    assert parsed.is_multistage and len(stages) >= 2
    final = stages[-1]
    copies = [i["value"] for i in final if i["instruction"] == "COPY"]
    assert copies == ["--from=builder /opt/forge /opt/forge"]


def test_every_run_calls_install_sh(parsed) -> None:
    runs = [i["value"] for i in parsed.structure if i["instruction"] == "RUN"]
    assert len(runs) >= 2
    for value in runs:
        command = _RUN_FLAG.sub("", value).strip()
        script = command.split()[0]
        assert Path(script).name == "install.sh" and "&&" not in command and ";" not in command, (
            f"RUN {value!r} does not call deploy/install.sh alone"
        )


def test_the_final_user_is_numeric_and_not_root(parsed) -> None:
    users = [i["value"] for i in _stages(parsed)[-1] if i["instruction"] == "USER"]
    assert users, "the final stage sets no USER: the container would run as root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]} is not a numeric non-root uid"
    assert not gid or (gid.isdigit() and int(gid) != 0)
    # The state directory install.sh creates belongs to that uid.
    runs = [i["value"] for i in _stages(parsed)[-1] if i["instruction"] == "RUN"]
    assert any(f"--state-dir /var/lib/forge {uid}" in r for r in runs)


def test_the_role_is_the_command_and_compose_runs_the_same_image(parsed) -> None:
    assert "ENTRYPOINT" not in {i["instruction"] for i in parsed.structure}
    cmd = json.loads(parsed.cmd if isinstance(parsed.cmd, str) else json.dumps(parsed.cmd))
    assert tuple(cmd[:2]) in ROLES
    env = parsed.envs
    assert env["FORGE_STEP_RUNTIME"] == "/opt/forge/runtime"
    assert env["PATH"].split(":")[0] == "/opt/forge/bin"
    for name, svc in compose.forge_services(compose.load()).items():
        assert compose.interpolate(svc["image"], {}).startswith(compose.FORGE_IMAGE), name
        assert tuple(svc["command"][:2]) in ROLES, f"{name}: {svc['command']} is not a role"


def test_every_base_image_is_pinned_and_locked(parsed) -> None:
    locked = dict(lock_rows())
    stages = {i["value"].split()[-1] for i in parsed.structure if " AS " in i["value"].upper()}
    bases = [img for img in parsed.parent_images if img not in stages]
    assert bases
    for image in bases:
        repo, sep, tag = image.rpartition(":")
        assert sep and re.fullmatch(r"\d+\.\d+-slim", tag), f"{image}: no exact Debian tag"
        assert image in locked, f"{image} is missing from deploy/images.lock"
    assert len(set(bases)) == 1, "the final stage must run on the builder's base"
