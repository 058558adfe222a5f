"""deploy/images.lock's rows, read by deploy/pin_images.py's own parser."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.deploy.compose import LOCK, ROOT


def pin_module() -> ModuleType:
    """deploy/pin_images.py, imported by path (deploy/ is not a package)."""
    spec = importlib.util.spec_from_file_location("pin_images", ROOT / "deploy" / "pin_images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lock_rows() -> list[tuple[str, str]]:
    """(image, digest) per row of deploy/images.lock."""
    rows: list[tuple[str, str]] = pin_module().parse(LOCK.read_text())
    return rows
