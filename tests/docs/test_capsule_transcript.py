"""docs/cli-capsules.md's transcript, run live: the billing audit, its extraction, the capsule on
next week's data, a second version, the diff, export and import, and the refusals.

Every `$ forge …` line of the page runs in order on one FORGE_HOME against the session's dev
server. What differs from run to run is mapped back to what the page shows before comparing:
the run ids (each new one to the shown one it stands for), the data directories, the export
file and the capsule hashes (they cover the source run's id and receipts).
"""

import os
import re
import secrets
import sys

from activities.store.artifacts import open_artifact_store
from activities.store.capsules import open_capsule_store
from schemas.scope import Scope
from tests.docs.running import assert_prints_shown, printed_by
from tests.docs.shown import ROOT, shown_commands
from workers.settings import Settings

PAGE = ROOT / "docs" / "cli-capsules.md"
RUN_ID = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")
DATA = {".forge/demo/data": 2, ".forge/demo/week-48": 7}
EXPORT = "/tmp/billing-audit.capsule.json"
SHOWN_HASH = re.compile(r"│ (\d+)\s+│ ([0-9a-f]{12}) │")


def shown_hashes() -> tuple[dict[int, str], str]:
    """Version -> the 12 hex digits of its capsule hash (the page's versions table), and the
    whole hash of version 1 (`capsule show`)."""
    text = PAGE.read_text(encoding="utf-8")
    found = {int(v): h for v, h in SHOWN_HASH.findall(text)}
    full = re.search(r"billing-audit@1 · (sha256:[0-9a-f]{64})", text)
    assert full and found, "the page shows no capsule hashes"
    assert full.group(1)[7:19] == found[1]
    return found, full.group(1)


def test_the_capsule_transcript(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("FORGE_INPUT_ROOTS", str(tmp_path))
    sys.path.insert(0, str(ROOT / "examples" / "billing-audit"))
    try:
        import generate  # the generator `make demo` runs
    finally:
        sys.path.pop(0)
    paths = {}
    for shown_dir, seed in DATA.items():
        own = tmp_path / f"seed-{seed}"
        generate.generate(own, seed=seed)
        paths[shown_dir] = str(own)
    export = "/tmp/" + secrets.token_hex(16)[: len(EXPORT) - len("/tmp/")]
    home = str(tmp_path / "home")
    hashes = shown_hashes()
    ids: dict[str, str] = {}  # shown run id -> this test's
    commands = list(shown_commands(PAGE))
    assert [s.command.split()[:3] for s in commands if s.command.startswith("forge capsule")]
    try:
        for shown in commands:
            command = shown.command.replace(EXPORT, export)
            for shown_dir, own in paths.items():
                command = command.replace(shown_dir, own)
            for old, new in ids.items():
                command = command.replace(old, new)
            printed = printed_by(shown, command).replace(export, EXPORT)
            for shown_dir, own in paths.items():
                printed = printed.replace(own, shown_dir)
            new_ids = [i for i in dict.fromkeys(RUN_ID.findall(printed)) if i not in ids.values()]
            old_ids = [i for i in dict.fromkeys(RUN_ID.findall("\n".join(shown.output)))]
            for old, new in zip([i for i in old_ids if i not in ids], new_ids, strict=False):
                ids[old] = new
            assert_prints_shown(shown, _as_shown(printed, home, hashes), home)
    finally:
        if os.path.exists(export):
            os.remove(export)


def _as_shown(printed: str, home: str, hashes: tuple[dict[int, str], str]) -> str:
    """Each capsule hash this run made, written as the page's hash of the same version."""
    settings = Settings(home=home)
    artifacts = open_artifact_store(settings.artifacts_url)
    with open_capsule_store(settings.database_url, artifacts) as store:
        try:
            versions = store.versions(Scope.default(), "billing-audit")
        except KeyError:
            return printed
    short, first = hashes
    for v in versions:
        if v.version == 1:
            printed = printed.replace(v.capsule_hash, first)
        if v.version in short:
            printed = printed.replace(v.capsule_hash[7:19], short[v.version])
    return printed
