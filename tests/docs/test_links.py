"""Every relative link in README.md and docs/ points at an existing file (and heading)."""

import re
from pathlib import Path

import pytest

from tests.docs.shown import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")


def _links(page: Path) -> list[str]:
    text = _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return [m.group(1) for m in _LINK.finditer(text)]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _CODE.sub(lambda m: m.group(0).strip("`"), heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_pages_link_somewhere():
    assert len(PAGES) > 10, "docs/ holds the reference pages"
    assert any(_links(page) for page in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path):
    broken = []
    for link in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto: — not checked here
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor} in {path.name}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_linked_from_the_index():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / link.partition("#")[0]).resolve() for link in _links(index)}
    pages = sorted((ROOT / "docs").glob("*.md"))
    unlinked = [p.name for p in pages if p != index and p not in linked]
    assert not unlinked, f"docs/README.md does not link {unlinked}"
