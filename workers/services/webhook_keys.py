"""The server's webhook signing key: from FORGE_WEBHOOK_SIGNING_KEY, else one file under home.

Every webhook's secret derives from it (activities/webhooks/signing.py), so the API that shows a
secret and the worker that signs with it must read the same key: processes that share
FORGE_HOME share the file; processes on different hosts set FORGE_WEBHOOK_SIGNING_KEY alike.
Changing the key changes every webhook's secret.
"""

import contextlib
import os
import secrets
import tempfile
from pathlib import Path

from workers.settings import Settings

__all__ = ["KEY_FILE", "server_signing_key"]

KEY_FILE = "webhook-signing.key"


def server_signing_key(settings: Settings) -> bytes:
    """The key: the setting if set, else the file, made (0600) by the first process to need it."""
    if settings.webhook_signing_key is not None:
        return settings.webhook_signing_key.get_secret_value().encode()
    path = settings.home / KEY_FILE
    if not path.exists():
        _create(path)
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(
            f"{path} is empty: delete it to generate a new webhook signing key (every "
            "webhook's secret changes), or set FORGE_WEBHOOK_SIGNING_KEY"
        )
    return key.encode()


def _create(path: Path) -> None:
    """Write a new key beside `path` and link it into place: whoever links first wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, draft = tempfile.mkstemp(dir=path.parent, prefix=".webhook-key-")  # mode 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)  # atomic: a reader never sees a half-written key
    finally:
        os.unlink(draft)
