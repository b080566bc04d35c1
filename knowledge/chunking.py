"""Cutting a document into chunks of about ``CHUNK_CHARS`` characters.

Markdown and plain text are split at headings (``#`` to ``######``) and then at paragraphs
(blank lines); paragraphs of one section are joined while they fit in ``CHUNK_CHARS``, and a
paragraph longer than that is cut at sentence ends (``.!?。！？；``), else hard. Each chunk
carries the heading of its section. HTML is first turned into that text with the standard
library's ``html.parser`` (tags dropped, ``script``/``style`` dropped, headings kept as
headings, block elements as paragraph breaks): nothing in a document is ever executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

CHUNK_CHARS = 800
"""Target (and, bar a heading, maximum) characters of a chunk."""
MAX_HEADING_CHARS = 300

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""The CJK ideograph ranges (Chinese, and Japanese kanji): text without spaces between words."""
_CJK_CHAR = re.compile(f"[{CJK}]")

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


@dataclass(frozen=True, slots=True)
class Chunk:
    heading: str
    text: str


def chunk_text(text: str, size: int = CHUNK_CHARS) -> list[Chunk]:
    """``text`` (Markdown or plain text) cut into chunks (module docstring)."""
    chunks: list[Chunk] = []
    heading = ""
    paragraph: list[str] = []
    paragraphs: list[str] = []

    def end_paragraph() -> None:
        if paragraph:
            joined = "\n".join(paragraph).strip()
            if joined:
                paragraphs.append(joined)
            paragraph.clear()

    def end_section() -> None:
        end_paragraph()
        chunks.extend(Chunk(heading, body) for body in _pack(paragraphs, size))
        paragraphs.clear()

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        found = _HEADING.match(line)
        if found:
            end_section()
            heading = found.group(2).strip()[:MAX_HEADING_CHARS]
        elif not line.strip():
            end_paragraph()
        else:
            paragraph.append(line.rstrip())
    end_section()
    return chunks


def _pack(paragraphs: list[str], size: int) -> list[str]:
    """Paragraphs joined into texts of at most ``size`` characters (long ones cut)."""
    out: list[str] = []
    current = ""
    for paragraph in paragraphs:
        for piece in _cut(paragraph, size):
            if current and len(current) + 2 + len(piece) > size:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _cut(paragraph: str, size: int) -> list[str]:
    if len(paragraph) <= size:
        return [paragraph]
    pieces: list[str] = []
    current = ""
    for sentence in (s for s in _SENTENCE_END.split(paragraph) if s):
        while len(sentence) > size:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:size])
            sentence = sentence[size:]
        if current and len(current) + 1 + len(sentence) > size:
            pieces.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


_BLOCKS = frozenset(
    "p div br li ul ol tr table section article header footer blockquote pre dt dd hr main aside nav".split()
)
_SKIPPED = frozenset(("script", "style", "template", "noscript", "head"))


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif re.fullmatch(r"h[1-6]", tag) or tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(re.sub(r"[ \t\r\n]+", " ", data))


def html_text(html: str) -> str:
    """The text of ``html`` as Markdown-ish text (headings as ``#`` lines)."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    return "\n".join(lines)


def chunk_language(text: str) -> str:
    """``zh`` when CJK ideographs are at least a tenth of ``text``'s letters and digits (a
    Chinese passage with English terms in it), else ``en`` (English and every spaced script).
    On PostgreSQL it chooses the index a chunk is in (``knowledge.search``)."""
    letters = sum(1 for ch in text if ch.isalnum())
    cjk = len(_CJK_CHAR.findall(text))
    return "zh" if letters and cjk * 10 >= letters else "en"


_RST_UNDERLINE = re.compile(r"^([=\-~^*+#\"'`:.])\1{2,}\s*$")


def rst_text(text: str) -> str:
    """reStructuredText with its section titles (a line underlined, and maybe overlined, with
    ``= - ~ ^ * + # " ' ` : .``) turned into ``#`` headings; everything else kept as text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    n = 0
    while n < len(lines):
        line = lines[n]
        below = lines[n + 1] if n + 1 < len(lines) else ""
        title = line.strip()
        if (
            title
            and not _RST_UNDERLINE.match(line)
            and _RST_UNDERLINE.match(below)
            and len(below.strip()) >= len(title)
        ):
            if out and _RST_UNDERLINE.match(out[-1]):
                out.pop()  # the overline of an over- and underlined title
            out += ["", f"# {title}", ""]
            n += 2
            continue
        out.append(line)
        n += 1
    return "\n".join(out)


def chunk_code(text: str, heading: str, size: int = CHUNK_CHARS) -> list[Chunk]:
    """Source code cut at blank lines into chunks of at most ``size`` characters, each under
    ``heading`` (the file's path): ``#`` lines are comments here, never headings."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if b.strip()]
    return [Chunk(heading[:MAX_HEADING_CHARS], body) for body in _pack(blocks, size)]


def chunk_document(text: str, content_type: str, size: int = CHUNK_CHARS, *, name: str = "") -> list[Chunk]:
    """The chunks of a document of ``content_type`` (``md``, ``txt``, ``html``, ``rst`` or
    ``code``; ``name`` is a code file's heading)."""
    if content_type == "html":
        text = html_text(text)
    elif content_type == "rst":
        text = rst_text(text)
    elif content_type == "code":
        return chunk_code(text, name, size)
    return chunk_text(text, size)
