"""Reads context packs (stdlib/context/<consumer>.yaml) from disk into the pure `parse_pack`."""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from compiler.context import ContextError, parse_pack
from schemas.context import ContextPack
from schemas.error_codes import ErrorCode

STDLIB_DIR = Path(__file__).resolve().parents[2] / "stdlib"


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(unknown line)"
        raise ContextError(
            ErrorCode.CONTEXT_PACK_INVALID,
            f"{_display(path)}: {where}: invalid YAML: {exc.problem}",
        ) from None
    except UnicodeDecodeError as exc:
        raise ContextError(
            ErrorCode.CONTEXT_PACK_INVALID, f"{_display(path)}: (bytes): not UTF-8: {exc.reason}"
        ) from None


def _packs_in(directory: Path) -> dict[str, ContextPack]:
    found: dict[str, ContextPack] = {}
    sources: dict[str, str] = {}
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    for path in paths if directory.is_dir() else []:
        source = _display(path)
        pack = parse_pack(_read(path), source)
        if pack.consumer in found:
            raise ContextError(
                ErrorCode.CONTEXT_PACK_INVALID,
                f"{source}: consumer: {pack.consumer!r} already has a pack in "
                f"{sources[pack.consumer]}; keep one pack per consumer in a directory",
            )
        found[pack.consumer] = pack
        sources[pack.consumer] = source
    return found


def load_context_packs(extra_dirs: Iterable[Path] = ()) -> dict[str, ContextPack]:
    """Packs by consumer: stdlib/context, then each dir's `context/` (later ones override)."""
    packs: dict[str, ContextPack] = {}
    for directory in (STDLIB_DIR, *extra_dirs):
        packs.update(_packs_in(directory / "context"))
    return packs
