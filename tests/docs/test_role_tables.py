"""The role tables of docs/api.md and docs/cli-access.md say what schemas.access grants."""

import re
from pathlib import Path

import pytest

from schemas.access import GRANTS

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("doc", ["api.md", "cli-access.md"])
def test_whether_a_viewer_reads_webhooks_is_what_its_grants_say(doc):
    row = re.search(r"^\| `viewer` \| (.*) \|$", (DOCS / doc).read_text(), re.MULTILINE)
    assert row is not None, f"{doc} has no viewer row"
    assert ("webhooks" in row.group(1)) == ("webhooks.read" in GRANTS["viewer"]), row.group(1)
    admin = re.search(r"^\| `admin` \| (.*) \|$", (DOCS / doc).read_text(), re.MULTILINE)
    assert admin is not None and "registering or removing webhooks" in admin.group(1)
