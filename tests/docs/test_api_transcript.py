"""docs/api.md's transcript, run live: every `$ curl …` (and the receiver it starts) in order.

The page is one session against `forge api`: a 401, an upload, a run and its gate decided,
its report downloaded, a webhook registered and its receiver started, the run extracted into a
capsule, the capsule run headless on new data, its gate-opened delivery received, decided with
one call, its report downloaded and the deliveries listed. Here the same commands run with
real curl against the API on loopback, a worker and the session's dev server, in a temporary
directory holding examples/api/.

What changes from run to run is learned, not ignored: a value under a key such as `run_id`,
`secret` or `webhook_id` in the shown output stands for the live one at the same place, and
later commands have the shown value replaced by the live one before they run. Everything
else must be equal (after shown.normalise: timestamps, run ids), hashes included.
A GET is retried until it prints what is shown (a gate opens, a run ends, a delivery
arrives) and then must; a POST runs once.

`FORGE_RECORD_DOCS=1` rewrites the page's outputs with this session's instead of checking.
"""

import asyncio
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from temporalio.testing import WorkflowEnvironment

from activities.store.access import open_access_store
from schemas.access import Role
from schemas.scope import Actor
from tests.api.server import running_api
from tests.docs.shown import ROOT, Shown, missing_lines, normalise, shown_commands

PAGE = ROOT / "docs" / "api.md"
SHOWN_API, SHOWN_RECEIVER, SHOWN_PORT = "localhost:8181", "127.0.0.1:9000", "--port 9000"
RUNNABLE = ("curl ", "tail ", "FORGE_WEBHOOK_SECRET=")
# Keys whose values are made anew each session: learned from the shown output, then replaced.
LEARNED = {
    "run_id", "source_run_id", "capsule_hash", "webhook_id", "secret", "id", "key_id",
    "event_id", "delivery_id", "seq", "from_seq", "next_after", "next_cursor", "content_hash",
    "prev_hash",
}  # fmt: skip
HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")
KEYS: dict[str, tuple[Role, str, Literal["system", "human"], list[str]]] = {
    # env var -> (role, actor id, kind, gate roles)
    "FORGE_KEY": ("operator", "billing-service", "system", []),
    "APPROVER_KEY": ("approver", "ana", "human", ["ops"]),
    "ADMIN_KEY": ("admin", "platform-admin", "system", []),
}
RETRY_S = 90
RECORD_RETRY_S = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Session:
    """The live values the shown ones stand for, and the processes the page started."""

    def __init__(self, api: str, receiver_port: int) -> None:
        self.values: dict[str, str] = {
            SHOWN_API: api,
            SHOWN_RECEIVER: f"127.0.0.1:{receiver_port}",
            SHOWN_PORT: f"--port {receiver_port}",
        }
        self.background: list[subprocess.Popen[bytes]] = []

    def live(self, text: str) -> str:
        """`text` with every shown value replaced by its live one (longest first, one pass)."""
        if not self.values:
            return text
        alternatives = "|".join(re.escape(v) for v in sorted(self.values, key=len, reverse=True))
        return re.sub(alternatives, lambda m: self.values[m[0]], text)

    def learn(self, shown: Any, live: Any, key: str = "") -> list[str]:
        """Differences between a shown and a live JSON value; learns what LEARNED keys hold."""
        if isinstance(shown, dict) and isinstance(live, dict):
            if set(shown) != set(live):
                return [f"keys {sorted(shown)} != {sorted(live)}"]
            return [d for k in shown for d in self.learn(shown[k], live[k], k)]
        if isinstance(shown, list) and isinstance(live, list):
            if len(shown) != len(live):
                return [f"{key}: {len(shown)} items shown, {len(live)} now"]
            return [d for a, b in zip(shown, live, strict=True) for d in self.learn(a, b, key)]
        if key in LEARNED and shown is not None and live is not None:
            known = self.values.setdefault(str(shown), str(live))
            return [] if known == str(live) else [f"{key}: {shown} is {known}, now {live}"]
        if isinstance(shown, str) and isinstance(live, str):
            same = normalise(self.live(shown)) == normalise(live)
            return [] if same else [f"{key}: shown {shown!r}, now {live!r}"]
        return [] if shown == live else [f"{key}: shown {shown!r}, now {live!r}"]

    def learn_anew(self, shown: list[str], printed: str) -> None:
        """Record mode: take the live values where the shown ones sit, whatever else differs."""
        try:
            docs = [json.loads(x) for x in shown if x.strip()]
            now = [json.loads(x) for x in printed.splitlines() if x.strip()]
        except json.JSONDecodeError:
            return
        for a, b in zip(docs, now, strict=False):
            self.learn(a, b)

    def differences(self, shown: list[str], printed: str) -> list[str]:
        lines = [x for x in shown if x.strip()]
        try:
            docs = [json.loads(x) for x in lines]
        except json.JSONDecodeError:  # headers and a body: every shown line, in order
            text = HTTP_DATE.sub("DATE", printed)
            return missing_lines([HTTP_DATE.sub("DATE", self.live(x)) for x in lines], text)
        try:
            now = [json.loads(x) for x in printed.splitlines() if x.strip()]
        except json.JSONDecodeError:
            return [f"not JSON: {printed!r}"]
        if len(now) != len(docs):
            return [f"{len(docs)} JSON lines shown, {len(now)} printed: {printed!r}"]
        return [d for a, b in zip(docs, now, strict=True) for d in self.learn(a, b)]


def _is_read(command: str) -> bool:
    return command.startswith("tail ") or not any(f in command for f in (" -d ", " -F ", " -X "))


def _run(command: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, timeout=60, check=False
    )
    return done.stdout.decode() + done.stderr.decode()


def _step(session: Session, shown: Shown, cwd: Path, env: dict[str, str]) -> str:
    """Run one shown command live; its output, once it is what the page shows (or the last)."""
    command = session.live(shown.command)
    if command.endswith("&"):
        args = shlex.split(command.removesuffix("&"))
        assigned = dict(a.split("=", 1) for a in args if re.match(r"^[A-Z_]+=", a))
        argv = [a for a in args if not re.match(r"^[A-Z_]+=", a)]
        argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        proc = subprocess.Popen(argv, cwd=cwd, env={**env, **assigned})
        session.background.append(proc)
        time.sleep(1.0)
        assert proc.poll() is None, f"{shown.source}: `{command}` exited"
        return ""
    recording = bool(os.environ.get("FORGE_RECORD_DOCS"))
    wait = (RECORD_RETRY_S if recording else RETRY_S) if _is_read(command) else 0
    deadline = time.monotonic() + wait
    while True:
        printed = _run(command, cwd, env)
        before = dict(session.values)
        if not session.differences(shown.output, printed):
            return printed
        if time.monotonic() >= deadline:
            if recording:  # the page is being rewritten: what this session printed stands
                session.values = before
                session.learn_anew(shown.output, printed)
            return printed
        session.values = before  # a wrong answer teaches nothing
        time.sleep(0.5)


async def test_the_api_transcript(
    temporal_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    commands = [s for s in shown_commands(PAGE) if s.command.startswith(RUNNABLE)]
    assert len(commands) >= 15, "docs/api.md lost its transcript"
    work = tmp_path / "work"  # the repository's root, as far as the page's commands go
    shutil.copytree(ROOT / "examples" / "api", work / "examples" / "api")
    receiver_port = _free_port()
    allowed = {"webhook_allow_ips": ["127.0.0.1"], "webhook_signing_key": uuid.uuid4().hex}
    db = f"sqlite:///{tmp_path / 'forge.db'}"
    async with running_api(temporal_env, task_queue, tmp_path / "home", db, **allowed) as api:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        env = {**os.environ, "PATH": path}  # `python` is this environment's
        with open_access_store(api.settings.database_url) as access:
            for var, (role, actor, kind, gate_roles) in KEYS.items():
                who = Actor(id=actor, name=actor, role=role, kind=kind)
                env[var] = access.create_key("acme", role, who, gate_roles=gate_roles).token
        session = Session(api.url.removeprefix("http://"), receiver_port)
        recorded: dict[str, str] = {}
        try:
            for shown in commands:
                printed = await asyncio.to_thread(_step, session, shown, work, env)
                recorded[shown.source] = printed
                if os.environ.get("FORGE_RECORD_DOCS"):
                    continue
                wrong = session.differences(shown.output, printed)
                assert not wrong, f"{shown.source}: `{shown.command}`:\n" + "\n".join(wrong)
        finally:
            for proc in session.background:
                proc.terminate()
                proc.wait(timeout=10)
    if os.environ.get("FORGE_RECORD_DOCS"):
        _record(commands, recorded, session)


def _record(commands: list[Shown], printed: dict[str, str], session: Session) -> None:
    """Write this session's outputs into the page under their commands (shown addresses kept)."""
    back = {session.values[shown]: shown for shown in (SHOWN_API, SHOWN_RECEIVER, SHOWN_PORT)}
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    by_line = {int(s.source.rsplit(":", 1)[1]): s for s in commands}
    out: list[str] = []
    skipping = False
    for number, line in enumerate(lines, start=1):
        if number in by_line:
            command = session.live(line)
            for live, shown in back.items():
                command = command.replace(live, shown)
            out.append(command)
            text = printed[by_line[number].source].rstrip("\n")
            for live, shown in back.items():
                text = text.replace(live, shown)
            out.extend(text.splitlines() if text else [])
            skipping = True
            continue
        if skipping and (line.startswith("$ ") or line.startswith("```")):
            skipping = False
        if not skipping:
            out.append(line)
    PAGE.write_text("\n".join(out) + "\n", encoding="utf-8")
