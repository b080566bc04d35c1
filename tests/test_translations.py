"""The pages in English and in Simplified Chinese (Django i18n), the language switcher, the
operator's time zone, and the catalogs themselves (docs/architecture.md "Translations").

Every page of ``web.urls`` (tests/pages.py) is rendered twice over the built-in team: with
``Accept-Language: en`` it shows no Chinese of its own (the switcher's "简体中文" aside), with
``zh-hans`` no text of the page is an English catalog string left untranslated."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from capabilities.models import CapabilityCard, ConfigChange, Project
from capabilities.skill_models import SkillStatus
from interop.models import OAuthClient, OAuthGrant
from teamclaw.message_catalogs import CatalogEntry, read_po
from teamclaw.time_zones import operator_time_zone
from tests.pages import page_path, page_patterns, parameters, takes_get
from tests.skills.support import bring_up, skill_yaml

CJK = re.compile(r"[\u4e00-\u9fff]")
CATALOGS = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%s")
TAG = re.compile(r"</?[a-z]+")

UNFILLED = {"task_id", "name", "context_id", "confirmation_id", "alert_id", "workflow_id", "token_id", "source_id"}
"""Pages about one run or workflow (the test's world has none); their fragments are the live
page's and the task page's, which are checked here."""


def entries(name: str) -> list[CatalogEntry]:
    """The messages of ``locale/zh_Hans/LC_MESSAGES/<name>.po``, header left out."""
    return read_po(CATALOGS / f"{name}.po")[1:]


class VisibleText(HTMLParser):
    """The words a reader sees: text nodes and ``title``/``placeholder``/``aria-label``
    attributes, except inside identifiers and content that is not prose.

    Identifiers (role and capability ids, statuses, message types, ``config_type`` values,
    PRD terms) stay as they are in every language; a page shows one in ``<code>`` or in an
    element marked with HTML's ``translate="no"`` (the attribute browsers' page translators
    honour too), and everything inside such an element, attributes included, is exempt.
    Scripts, styles, preformatted text and form fields' content are not prose."""

    SKIP = {"script", "style", "code", "pre", "textarea", "option"}
    ATTRIBUTES = ("title", "placeholder", "aria-label")
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.open: list[tuple[str, bool]] = []
        """The open elements: (tag, whether its content is exempt)."""

    @property
    def skipping(self) -> bool:
        return bool(self.open) and self.open[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        exempt = self.skipping or tag in self.SKIP or dict(attrs).get("translate") == "no"
        if not exempt:
            for name, value in attrs:
                if name in self.ATTRIBUTES and value:
                    self.texts.append(value.strip())
        if tag not in self.VOID:
            self.open.append((tag, exempt))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching element (HTML lets some end tags be left out).
        for index in range(len(self.open) - 1, -1, -1):
            if self.open[index][0] == tag:
                del self.open[index:]
                return

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.texts.append(" ".join(data.split()))


class ProseText(VisibleText):
    """What an operator reads without hovering: :class:`VisibleText` less ``title`` tooltips,
    where references for engineers (PRD sections, seed numbers) may stay."""

    ATTRIBUTES = ("placeholder", "aria-label")


def visible_texts(html: str, parser_class: type[VisibleText] = VisibleText) -> list[str]:
    parser = parser_class()
    parser.feed(html)
    return parser.texts


REFERENCE = re.compile(r"seed 0\d\d|§", re.IGNORECASE)
"""A spec reference (``PRD §4.8``, ``seed 002 §6.7``): for engineers, in docs and tooltips."""


def references(html: str) -> list[str]:
    """The texts of ``html`` an operator reads (:class:`ProseText`) that cite the spec."""
    return [text for text in visible_texts(html, ProseText) if REFERENCE.search(text)]


def untranslated_strings() -> set[str]:
    """Catalog strings whose Chinese differs from the English: seeing one of them whole on a
    Chinese page means a string escaped translation. Strings with placeholders or markup are
    left out (they never appear as one text node)."""
    found = set()
    for entry in entries("django"):
        if PLACEHOLDER.search(entry.msgid) or "<" in entry.msgid or entry.strings[0] == entry.msgid:
            continue
        found.add(" ".join(entry.msgid.split()))
    return found


def consent_request() -> OAuthGrant:
    """An OAuth client's open request, so the consent page has something to ask."""
    OAuthClient.objects.create(client_id="desktop", name="Desktop", info={"client_id": "desktop"})
    return OAuthGrant.objects.create(id="grant", client_id="desktop", params={"redirect_uri": "http://127.0.0.1/cb"})


@pytest.fixture
def page_paths(transactional_db, builtin, api) -> list[str]:
    """Every page that a GET shows over the built-in team, a project and one skill."""
    Project.objects.create(slug="shop", name="Shop")
    bring_up(api, skill_yaml("english", "lookup", "glossary:ENTRY"))
    card = CapabilityCard.objects.filter(skill__isnull=True).first().capability_id
    values = {
        "role": "coderA",
        "capability_id": card,
        "which": "invoke",
        "slug": "shop",
        "template_type": "persona",
        "version": "1.0.0",
        "skill_id": "english",
        "action": "deactivate",
        "change_id": str(ConfigChange.objects.order_by("pk").first().pk),
        "grant_id": consent_request().pk,
    }
    paths = ["/permissions/invoke/?project=shop", "/permissions/tools/", "/login/"]
    for pattern in page_patterns():
        path = page_path(pattern, values)
        if path is None:
            assert set(parameters(pattern)) & UNFILLED, pattern.name
        else:
            paths.append(path)
    return paths


def test_every_page_renders_fully_in_english_and_in_chinese(page_client, page_paths):
    """English (``Accept-Language: en``): no Chinese of the page's own. Chinese (``zh-hans``):
    ``<html lang>`` and the navigation in Chinese, and no English catalog string left
    on the page. Fragments (htmx, no ``<html>``) are held to the same text rules."""
    english = untranslated_strings()
    chinese_found, english_left = {}, {}
    checked = 0
    for path in page_paths:
        response = page_client.get(path, HTTP_ACCEPT_LANGUAGE="en")
        if not takes_get(response):
            continue
        assert response.status_code == 200, path
        html = response.content.decode()
        whole_page = "<html" in html
        assert not whole_page or '<html lang="en">' in html, path
        if chinese := CJK.findall(html.replace(">简体中文</option>", "></option>")):
            chinese_found[path] = "".join(dict.fromkeys(chinese))

        response = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans,zh;q=0.9")
        assert response.status_code == 200, path
        html = response.content.decode()
        if whole_page:
            assert '<html lang="zh-hans">' in html, path
            if path != "/login/":
                assert ">仪表盘</a>" in html and ">退出登录</button>" in html, path
        if stray := sorted({text for text in visible_texts(html) if text in english}):
            english_left[path] = stray
        checked += 1
    assert chinese_found == {}
    assert english_left == {}, repr(english_left)
    assert checked > 30


def test_pages_speak_plainly_without_spec_references(page_client, page_paths):
    """Issue 32: no seed numbers or section references in the text of an operator page, in
    English or in Chinese; ``title`` tooltips, ``<code>`` and ``translate="no"`` may keep them."""
    found = {}
    for path in page_paths:
        for language in ("en", "zh-hans,zh;q=0.9"):
            response = page_client.get(path, HTTP_ACCEPT_LANGUAGE=language)
            if takes_get(response) and (cited := references(response.content.decode())):
                found[f"{language[:2]} {path}"] = cited
    assert found == {}, repr(found)
    assert references('<p title="PRD §4.8">Quality check (seed 002 §6.7)<code>§</code></p>') == [
        "Quality check (seed 002 §6.7)"
    ]


RUN_PAGES = ("/", "/live/", "/live/log/", "/tasks/", "/alerts/", "/config/changes/", "/stats/tokens/")
"""Pages that show a run's contexts, messages, snapshots, artifacts and config changes."""


@pytest.mark.django_db(transaction=True)
async def test_a_run_reads_in_chinese_on_its_pages_and_on_a_chinese_socket(runtime_host, staff_user):
    """What the empty world above cannot show: a finished run and a role switched off (a
    ``role`` config change) on every page about them and in the fragments a Chinese socket
    is sent. Statuses, types and ``config_type`` values are identifiers (``translate="no"``),
    so ``role`` or ``failed`` shown as one is no English left, while the words around them
    must be Chinese."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    from monitoring.models import ExecutionContext, Snapshot
    from runs.tasks import start_task
    from tests.live_helpers import close, collect_until, next_frame, open_socket, task_finished

    english = untranslated_strings()
    socket, connected, _ = await open_socket("/ws/live/", staff_user, cookies="django_language=zh-hans")
    assert connected
    await next_frame(socket)
    task = await sync_to_async(start_task)(workflow="generic", task_description="Plan the sprint", user=staff_user)
    events = await collect_until(socket, task_finished(task.id))
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    await sync_to_async(client.force_login)(staff_user)
    switched = await sync_to_async(client.post)("/roles/dba/switch/", {"enabled": "off", "version": 0})
    assert switched.status_code == 302
    changes = await collect_until(socket, lambda got: any(e["kind"] == "config_change" for e in got))
    await close(socket)
    pushed = {e["key"]: e["swap"]["html"] for e in events + changes}
    assert any(key.startswith("config_change:") for key in pushed)

    contexts = await sync_to_async(list)(ExecutionContext.objects.filter(task_id=task.id).values_list("id", flat=True))
    assert await sync_to_async(Snapshot.objects.filter(context__task_id=task.id).exists)()
    paths = [*RUN_PAGES, f"/tasks/{task.id}/", f"/live/?task={task.id}", f"/tasks/{task.id}/replay/"]
    paths += [p for c in contexts for p in (f"/live/contexts/{c}/", f"/replay/{c}/")]
    pages = {}
    for path in paths:
        response = await sync_to_async(client.get)(path)
        assert response.status_code == 200, path
        pages[path] = response.content.decode()
    assert '<strong translate="no">role</strong>' in pages["/live/"]  # the identifier, as it is
    assert "参数 {" in pages["/live/"] and "操作员" in pages["/live/"]  # summaries and the operator
    assert "输入 token" in pages["/stats/tokens/"] and "input tokens" not in pages["/stats/tokens/"]  # the chart
    english_left = {}
    assert {where: cited for where, html in pages.items() if (cited := references(html))} == {}
    for where, html in {**pages, **pushed}.items():
        if stray := sorted({text for text in visible_texts(html) if text in english}):
            english_left[where] = stray
    assert english_left == {}, repr(english_left)


def test_the_untranslated_check_finds_english_left_on_a_page():
    """The check above can fail: an English catalog string on a page is reported, unless it
    is an identifier (in ``<code>`` or marked ``translate="no"``, attributes included)."""
    english = untranslated_strings()
    assert {"role", "failed", "Runtime workers"} <= english  # words that are also identifiers
    html = (
        "<h2>Runtime workers</h2><p><code>Runtime workers</code> 运行时工作进程</p>"
        '<p>角色 <span class="badge" translate="no">role <b title="failed">failed</b></span> '
        '<span title="role">failed</span><br>role<img alt="" src="x.png">角色</p>'
    )
    assert [text for text in visible_texts(html) if text in english] == ["Runtime workers", "role", "failed", "role"]


def test_the_switcher_remembers_the_language_in_a_cookie(page_client, builtin):
    response = page_client.get("/roles/", HTTP_ACCEPT_LANGUAGE="en")
    assert 'action="/i18n/setlang/"' in response.content.decode()
    assert '<option value="zh-hans" lang="zh-hans">简体中文</option>' in response.content.decode()
    response = page_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/roles/"})
    assert response.status_code == 302
    assert response["Location"] == "/roles/"
    assert page_client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    html = page_client.get("/roles/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="zh-hans">' in html
    assert "<h1>角色</h1>" in html
    assert '<option value="zh-hans" lang="zh-hans" selected>' in html
    page_client.post("/i18n/setlang/", {"language": "en", "next": "/roles/"})
    assert "<h1>Roles</h1>" in page_client.get("/roles/").content.decode()


def test_the_switcher_works_before_logging_in_and_refuses_a_foreign_next(client, db):
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "https://evil.example/"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    html = client.get("/login/").content.decode()
    assert "<h1>登录 TeamClaw</h1>" in html
    assert "用户名" in html


def test_language_code_is_the_default_without_accept_language(page_client, builtin, settings):
    assert "<h1>Roles</h1>" in page_client.get("/roles/").content.decode()
    settings.LANGUAGE_CODE = "zh-hans"
    assert "<h1>角色</h1>" in page_client.get("/roles/").content.decode()


def test_error_pages_and_messages_are_translated(page_client, builtin):
    response = page_client.get("/capabilities/nope/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 404
    html = response.content.decode()
    assert "这里什么都没有。" in html and "返回仪表盘" in html
    assert "there is nothing here" not in html
    response = page_client.get("/api/v1/nope/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.json()["detail"] == "there is nothing here"  # programs read the API in English
    response = page_client.post("/roles/dba/switch/", {"enabled": "on", "version": 0}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = page_client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert re.search(r"没有变化：角色 dba 已经是已启用。|角色 dba 现在为已启用", html)


def test_labels_that_pages_build_from_identifiers_read_in_chinese(page_client, builtin):
    """Found by a walkthrough on the Chinese pages: the project types, the constraints'
    units, the token chart's grouping, byte sizes and a review's phase and checks."""
    from django.template import Context, Template
    from django.utils import translation

    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    new_task = page_client.get("/tasks/new/", **zh).content.decode()
    assert "智能体（Agent）开发" in new_task and "AI agent development" not in new_task
    assert "1,000,000 字节" in new_task and "bytes)" not in new_task
    assert 'placeholder="# 我的功能&#10;- 用户必须能够……"' in new_task
    assert "AI agent development" in page_client.get("/tasks/new/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    constraints = page_client.get("/constraints/main/", **zh).content.decode()
    assert "0 – 10 次重试" in constraints and "1 – 64 个实例" in constraints and " retries" not in constraints
    stats = page_client.get("/stats/tokens/?group_by=task", **zh).content.decode()
    assert "selected>任务</option>" in stats and ">task</option>" not in stats
    with translation.override("zh-hans"):
        shown = Template(
            "{% load outcome_labels %}{{ 'done'|phase_label }}|{{ checks|check_labels }}|{{ 'odd'|phase_label }}"
        ).render(Context({"checks": ["closure", "unresolved"]}))
    assert shown == "阶段：已完成|闭环, 未解决的要点|阶段： odd"


def test_the_scripts_catalog_is_served_locally_in_the_page_language(page_client, builtin):
    html = page_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<script src="/i18n/js/" defer></script>' in html
    script = page_client.get("/i18n/js/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert json.dumps("连接中……") in script
    assert json.dumps("连接中……") not in page_client.get("/i18n/js/", HTTP_ACCEPT_LANGUAGE="en").content.decode()


def test_the_time_zone_cookie_changes_the_times_shown(page_client, builtin):
    path = "/stats/tokens/?since=2025-01-31T08:00Z"
    html = page_client.get(path).content.decode()
    assert "since 2025-01-31 08:00 UTC" in html
    assert '<span class="small" id="time-zone"' in html and ">UTC</span>" in html
    page_client.cookies["teamclaw_tz"] = "Asia/Shanghai"
    html = page_client.get(path).content.decode()
    assert "since 2025-01-31 16:00 Asia/Shanghai" in html
    assert ">Asia/Shanghai</span>" in html
    for refused in ("Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime", "x" * 100):
        page_client.cookies["teamclaw_tz"] = refused
        assert "since 2025-01-31 08:00 UTC" in page_client.get(path).content.decode(), refused


def test_only_known_zone_names_are_accepted():
    assert operator_time_zone("Europe/Berlin").key == "Europe/Berlin"
    for name in ("", "Nowhere/City", "..", "../zoneinfo/UTC", "/usr/share/zoneinfo/UTC", "A" * 65):
        assert operator_time_zone(name) is None, name


@pytest.mark.parametrize("name", ["django", "djangojs"])
def test_every_message_has_a_checked_chinese_translation(name):
    problems = []
    for entry in entries(name):
        if entry.fuzzy:
            problems.append(("fuzzy", entry.msgid))
        if not entry.translated:
            problems.append(("empty", entry.msgid))
            continue
        english = entry.msgid + (entry.plural or "")
        for translation in entry.strings:
            if set(PLACEHOLDER.findall(english)) != set(PLACEHOLDER.findall(translation)):
                problems.append(("placeholders", entry.msgid))
            if sorted(TAG.findall(entry.msgid)) != sorted(TAG.findall(translation)):
                problems.append(("markup", entry.msgid))
    assert problems == []
    assert len(entries(name)) > (500 if name == "django" else 5)


def test_the_committed_mo_files_match_their_po():
    """Fails when a .po was edited without ``manage.py compile_catalogs`` (the .mo files are
    committed so that a machine without GNU gettext serves the translations)."""
    call_command("compile_catalogs", "--check")


def test_skill_states_keep_their_english_identifiers():
    for value, label in SkillStatus.choices:
        assert not CJK.search(label), value


def test_the_language_choice_follows_the_operator_to_another_browser(builtin, staff_user):
    """Issue 32: the choice was only a cookie, so the next login in another browser lost it."""
    from django.test import Client

    from monitoring.models import OperatorPreference

    here = Client()
    here.force_login(staff_user)
    here.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert OperatorPreference.objects.get(user=staff_user).language == "zh-hans"
    elsewhere = Client(HTTP_ACCEPT_LANGUAGE="en")  # a new browser: no language cookie
    elsewhere.force_login(staff_user)
    response = elsewhere.get("/")
    assert '<html lang="zh-hans"' in response.content.decode()
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    elsewhere.post("/i18n/setlang/", {"language": "en", "next": "/"})  # the latest choice wins
    assert '<html lang="en"' in elsewhere.get("/").content.decode()
    assert OperatorPreference.objects.get(user=staff_user).language == "en"
    anonymous = Client(HTTP_ACCEPT_LANGUAGE="en")
    anonymous.post("/i18n/setlang/", {"language": "zh-hans", "next": "/login/"})
    assert OperatorPreference.objects.count() == 1
