"""`make pin-images` (deploy/pin_images.py): one clear line when no registry answers."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.deploy.compose import LOCK, ROOT
from tests.deploy.pin_rows import lock_rows, pin_module


def _closed_port() -> int:
    # Bound then closed: nothing listens there, so a connection is refused at once.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_registry_fails_with_one_line_and_changes_nothing(tmp_path: Path) -> None:
    lock = tmp_path / "images.lock"
    lock.write_text(LOCK.read_text())
    url = f"http://127.0.0.1:{_closed_port()}"
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "pin_images.py"), "--lock", str(lock),
         "--registry", url, "--auth", url + "/token?scope={repo}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "cannot reach the registry" in lines[0]
    assert "make pin-images" in lines[0]
    assert lock.read_text() == LOCK.read_text()


def test_the_lock_file_says_how_it_is_filled() -> None:
    header = [line for line in LOCK.read_text().splitlines() if line.startswith("#")]
    assert any("make pin-images" in line for line in header)
    assert lock_rows(), "no image in deploy/images.lock"


def test_render_fills_digests_and_keeps_comments() -> None:
    pin = pin_module()
    text = LOCK.read_text()
    digest = "sha256:" + "a" * 64
    rendered = pin.render(text, {"temporalio/server:1.29.1": digest})
    rows = dict(pin.parse(rendered))
    assert rows["temporalio/server:1.29.1"] == digest
    assert rows["forge:0.1.0"] == "local"
    assert [line for line in rendered.splitlines() if line.startswith("#")] == [
        line for line in text.splitlines() if line.startswith("#")
    ]
