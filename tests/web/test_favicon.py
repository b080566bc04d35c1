"""Browsers find the site's icon: every page links it and /favicon.ico leads to it."""

from __future__ import annotations

from django.test import Client


def test_pages_link_the_svg_icon(page_client, builtin):
    for path in ("/", "/login/"):
        html = (page_client if path == "/" else Client()).get(path).content.decode()
        assert '<link rel="icon" href="/static/teamclaw/favicon.svg" type="image/svg+xml">' in html, path


def test_favicon_ico_leads_to_the_icon_without_a_login(db):
    client = Client()
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/teamclaw/favicon.svg"
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    assert icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content if icon.streaming else [icon.content])
