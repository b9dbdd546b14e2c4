"""Mail text without any SDK: HTML reduced to text (stdlib ``html.parser``), long text trimmed, and
reply subjects (pure, so the ``gmail_reply`` preview can show the subject that will be sent)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCKS = frozenset({"p", "div", "br", "tr", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6",
                     "blockquote", "pre", "hr", "section", "article", "header", "footer"})
_SKIPPED = frozenset({"script", "style", "head", "title", "noscript", "template"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")
_RE_PREFIXES = re.compile(r"^(?:\s*re\s*:)+", re.IGNORECASE)


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._skip = 0
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skip += 1
        elif tag in _BLOCKS:
            self.chunks.append("\n")
        elif tag == "li":  # one line per item, no blank line between items
            self.chunks.append("\n- ")
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCKS:
            self.chunks.append("\n")
        if tag == "a" and self._href and self._href.startswith(("http://", "https://")):
            self.chunks.append(f" ({self._href})")
            self._href = None

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.chunks.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.chunks.append(data)


def html_to_text(markup: str) -> str:
    """Readable text of an HTML mail body: no tags, scripts or styles; paragraphs as lines; link
    targets kept in parentheses."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(parser.chunks).split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def trim(text: str, limit: int) -> tuple[str, str | None]:
    """``text`` cut to ``limit`` characters, and a note saying so when it was cut."""
    if len(text) <= limit:
        return text, None
    return text[:limit].rstrip() + " …", f"the body has {len(text)} characters; showing the first {limit}"


def reply_subject(subject: str) -> str:
    """The subject of a reply: ``subject`` with a single leading ``Re:`` (kept when already there)."""
    stripped = subject.strip()
    return stripped if stripped.lower().startswith("re:") else f"Re: {stripped}".rstrip()


def same_subject(a: str, b: str) -> bool:
    """Whether two subjects name the same conversation: equal once leading ``Re:`` prefixes,
    case and runs of whitespace are ignored (``"RE:  Budget"`` matches ``"budget"``)."""
    def key(subject: str) -> str:
        return " ".join(_RE_PREFIXES.sub("", subject).split()).casefold()
    return key(a) == key(b)
