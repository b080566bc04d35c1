"""Markdown artifacts as the pages show them: rendered with markdown-it-py (CommonMark plus
tables, raw HTML off) and sanitised with nh3, so a requirement document can never bring
script, styles or event handlers into the dashboard."""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
    "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
"""No ``style``: the Content-Security-Policy allows no inline styles (table alignment is lost)."""
URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str) -> SafeString:
    """``text`` (Markdown) as sanitised HTML: only the tags above, links with ``http``,
    ``https`` or ``mailto`` and ``rel="noopener noreferrer nofollow"``; images are dropped."""
    html = _RENDERER.render(text)
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # sanitised by nh3 just above
