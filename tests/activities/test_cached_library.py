"""The API's type library is loaded once and again only when a pack file changes (issue 35 §1)."""

import os
import shutil
from pathlib import Path

from activities.compile import typelib
from activities.compile.typelib import cached_library, load_library

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "examples" / "my-packs" / "domains" / "insurance-claims.yaml"


def _packs(tmp_path: Path) -> Path:
    packs = tmp_path / "packs"
    (packs / "domains").mkdir(parents=True)
    shutil.copy(PACK, packs / "domains" / PACK.name)
    return packs


def test_an_unchanged_library_is_loaded_once(tmp_path, monkeypatch) -> None:
    packs = _packs(tmp_path)
    loads: list[tuple[Path, ...]] = []
    real = typelib.load_library

    def counted(extra_dirs=()):
        loads.append(tuple(extra_dirs))
        return real(extra_dirs)

    monkeypatch.setattr(typelib, "load_library", counted)
    first = cached_library((packs,))
    assert cached_library((packs,)) is first
    assert loads == [(packs,)]
    assert first.snapshot_hash == load_library((packs,)).snapshot_hash  # the same library
    assert "claims" in " ".join(first.domain_packs)


def test_a_changed_added_or_removed_pack_file_loads_it_again(tmp_path) -> None:
    packs = _packs(tmp_path)
    pack = packs / "domains" / PACK.name
    first = cached_library((packs,))

    # Edited in place (a new size and time): the new text is what compiles.
    pack.write_text(pack.read_text().replace("claims", "claimz"))
    edited = cached_library((packs,))
    assert edited is not first
    assert edited.snapshot_hash != first.snapshot_hash
    assert any("claimz" in key for key in edited.domain_packs)

    # Removed: back to the standard library alone.
    pack.unlink()
    assert cached_library((packs,)).snapshot_hash == load_library(()).snapshot_hash

    # Touched with the same size: a new time is enough.
    shutil.copy(PACK, pack)
    again = cached_library((packs,))
    later = pack.stat().st_mtime_ns + 10**9
    os.utime(pack, ns=(later, later))
    assert cached_library((packs,)) is not again
