"""What a receipt needs from an HTML page: element count, title, scripts, network references."""

import re
from html.parser import HTMLParser

MAX_REFS = 100  # distinct references kept, in order of appearance

_URL_ATTRS = frozenset(
    {"src", "href", "srcset", "action", "formaction", "data", "poster", "background", "xlink:href"}
)
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])\s*([^'")\s]+)""", re.IGNORECASE)


class HtmlScan(HTMLParser):
    """Counts elements and collects the title, scripts and network references of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements = 0
        self.title: list[str] = []
        self.title_state = "before"  # before -> inside -> done: only the first <title> counts
        self.in_style = False
        self.has_script = False
        self.refs: dict[str, None] = {}  # ordered, distinct

    def _ref(self, url: str) -> None:
        url = url.strip()
        if url.lower().startswith(("http://", "https://", "//")) and len(self.refs) < MAX_REFS:
            self.refs[url] = None

    def _css(self, css: str) -> None:
        for m in _CSS_URL.finditer(css):
            self._ref(m.group(1))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements += 1
        if tag == "title" and self.title_state == "before":
            self.title_state = "inside"
        self.has_script |= tag == "script"
        self.in_style |= tag == "style"
        for name, value in attrs:
            if value is None:
                continue
            # Inline handlers and javascript: URLs run code as surely as a <script> does.
            if name.startswith("on") or value.strip().lower().startswith("javascript:"):
                self.has_script = True
            if name == "srcset":
                for part in value.split(","):
                    self._ref(part.strip().split(" ")[0])
            elif name in _URL_ATTRS:
                self._ref(value)
            elif name == "style":
                self._css(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_state == "inside":
            self.title_state = "done"
        if tag == "style":
            self.in_style = False

    def handle_data(self, data: str) -> None:
        if self.title_state == "inside":
            self.title.append(data)
        if self.in_style:
            self._css(data)
