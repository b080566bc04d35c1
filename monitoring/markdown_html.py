"""Markdown artifacts as the pages show them: rendered with markdown-it-py (CommonMark plus
tables, raw HTML off) and sanitised with nh3, so a requirement document can never bring
script, styles or event handlers into the dashboard."""

from __future__ import annotations

import re

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
    "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
ALIGN_CLASSES = {"md-align-left", "md-align-center", "md-align-right"}
_ALIGN = re.compile(r'<(th|td) style="text-align:(left|center|right)">')
"""A table column's alignment as markdown-it writes it; the pages get a class instead (the
Content-Security-Policy allows no inline style)."""
URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str) -> SafeString:
    """``text`` (Markdown) as sanitised HTML: only the tags above, links with ``http``,
    ``https`` or ``mailto`` and ``rel="noopener noreferrer nofollow"``; images are dropped."""
    html = _ALIGN.sub(r'<\1 class="md-align-\2">', _RENDERER.render(text))
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        allowed_classes={"th": ALIGN_CLASSES, "td": ALIGN_CLASSES},
    )
    return mark_safe(clean)  # sanitised by nh3 just above
