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
from django.utils.html import escape

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
    ATTRIBUTES = ("title", "placeholder", "aria-label", "alt")
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
        html = re.sub(r'<fieldset lang="zh-hans">.*?</fieldset>', "", html, flags=re.S)  # a role's Chinese texts
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
    is sent: no English catalog string left, statuses and ``config_type`` values worded."""
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
    assert "<strong>角色</strong>" in pages["/live/"]  # the config type, worded (issue 32)
    assert "参数 {" in pages["/live/"] and "操作员" in pages["/live/"]  # summaries and the operator
    assert "统计的词元" in pages["/stats/tokens/"] and "Tokens by" not in pages["/stats/tokens/"]  # the chart
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
    assert "AI 智能体开发" in new_task and "AI agent development" not in new_task
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
    assert shown == "阶段：已完成|闭环、未解决的要点|阶段： odd"


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


# --- Issue 32: every word of a Chinese page in Chinese ---------------------------------

ALLOWED_WORDS = frozenset(
    {
        # The product and the protocols and formats it speaks.
        "TeamClaw",
        "MCP",
        "A2A",
        "OpenAI",
        "Markdown",
        "Jinja",
        "SemVer",
        "OpenTelemetry",
        "htmx",
        "Chromium",
        "stdio",
        "Streamable",
        "React",
        "TypeScript",
        "PostgreSQL",
        # Keys named on a keyboard.
        "Ctrl",
        "Schema",
        # What Chinese text writes in Latin letters: units, time zones' names.
        "ms",
        "Asia",
        "Shanghai",
    }
)
"""Words a Chinese page may show in Latin letters besides identifiers (``identifier_free``):
product, protocol and format names. Not ``token``: a Chinese page says 词元 for the unit a
model counts and 令牌 for a credential (``test_token_reads_as_one_word_per_meaning_in_chinese``).
All-capital words (``JSON``, ``API``, ``UTC``, ``AI``, ``ERP``) are
acronyms and allowed too; so is a single letter (a unit such as ``s``)."""

IDENTIFIER = re.compile(r"""[\w.:/@#~+-]*(?:[_\d/@]|[.:][a-z]|[a-z][A-Z])[\w.:/@#~+-]*""", re.ASCII)
"""A token that is an identifier, not a word: it holds ``_``, a digit, ``/``, ``@``, a dot or
a colon before a letter or an inner capital (``task_orchestration``, ``main-5462816c``,
``v2``, ``requirement_final.md``, ``text/markdown``, ``role:devops``, ``coderA``)."""

SEPARATOR = re.compile(r"[\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’…—·]+")
"""What separates tokens: white space, Chinese characters and Chinese punctuation."""

LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")
NOT_WORDS = re.compile(r"\{[^{}]*\}|\bseed 0\d\d\b|\bPRD\b", re.IGNORECASE)
"""Left out before the words are counted: a ``{...}`` list of JSON keys (a message's
``参数 {mode, requirement_artifact}``) and a reference to the spec (``seed 002``), which
only tooltips may carry (``test_pages_speak_plainly_without_spec_references``)."""


class ChineseText(VisibleText):
    """Every text a reader of a Chinese page sees, the content of ``translate="no"`` elements
    included (an English status marked so was still English to the reader, issue 32; only
    their attributes are exempt: an identifier field's example in its ``placeholder``),
    select options included; an identifier where ``<code>`` cannot go (an ``<option>``) is
    marked ``lang="zxx"``, "no linguistic content";
    left out: scripts, styles, ``<code>``, ``<pre>`` and form fields' content (code and what
    someone typed), and elements whose ``lang`` names another language than Chinese (a
    quoted document in English says so), and ``title`` tooltips that cite the spec."""

    SKIP = {"script", "style", "code", "pre", "textarea", "kbd", "samp"}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        lang = (dict(attrs).get("lang") or "zh").lower()
        exempt = self.skipping or tag in self.SKIP or not lang.startswith("zh")
        if not exempt and dict(attrs).get("translate") != "no":
            for name, value in attrs:
                # A tooltip citing the spec is for engineers (issue 32 point 2).
                if name in self.ATTRIBUTES and value and not (name == "title" and REFERENCE.search(value)):
                    self.texts.append(value.strip())
        if tag not in self.VOID:
            self.open.append((tag, exempt))


def english_words(html: str, identifiers: frozenset[str] = frozenset()) -> list[str]:
    """The English words of ``html``'s visible text (:class:`ChineseText`): Latin words of two
    letters or more that are not identifiers (``IDENTIFIER``, or one of ``identifiers``: the
    world's role slugs, project slugs and user names), not acronyms and not ``ALLOWED_WORDS``."""
    found = []
    for text in visible_texts(html, ChineseText):
        for token in SEPARATOR.split(NOT_WORDS.sub(" ", text)):
            if IDENTIFIER.fullmatch(token.strip("()（）[]【】,，.。:：;；·'\"“”‘’!?？！…")):
                continue
            for word in LATIN_WORD.findall(token):
                if word.isupper() or word in ALLOWED_WORDS or word in identifiers:
                    continue
                found.append(word)
    return found


def test_the_english_word_check_finds_words_and_lets_identifiers_be():
    html = (
        '<p>状态 <span class="badge" translate="no">running</span> · 由 main 生成 · '
        "<code>task_orchestration</code> main-5462816c v2 requirement_final.md text/markdown coderA "
        '3,768 个 token · JSON · 2 s</p><option>builtin</option><div lang="en">Customers must see</div>'
        '<p title="Waiting until Dec 5">等待</p><p title="seed 002 §6.7">结果 {mode, summary}</p>'
    )
    assert english_words(html, frozenset({"main"})) == ["running", "token", "builtin", "Waiting", "until", "Dec"]


def wait_for_pending(host, task_id: str, tool: str, timeout: float = 60) -> None:
    """Until the task waits for its operator's ``tool`` input (recorder flushed)."""
    import time

    from monitoring.models import ToolConfirmation

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host.recorder.flush()
        if ToolConfirmation.objects.filter(task_id=task_id, tool=tool, status="pending").exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never asked for {tool}")


@pytest.fixture
def world_with_runs(runtime_host, page_client, api, settings):
    """The built-in team, a project, a skill, a finished demo run in Chinese, and two runs
    waiting for their operator (an interview's first round; a review's decisions in confirm
    mode): the values that fill every page's parameters."""
    from monitoring.models import Artifact, ExecutionContext, Task
    from runs.tasks import sample_requirement, start_task
    from tests.helpers import wait_for_task

    settings.TEAMCLAW = {**settings.TEAMCLAW, "DEMO_THINK_MS": 0}
    Project.objects.create(slug="shop", name="网店")
    glossary = "skill:\n  id: zh_glossary\n  name: 术语表\n  version: 1.0.0\n  skillForm: SCENE\n"
    bring_up(api, glossary + "  capabilities:\n    - name: term_lookup\n      type: ENTRY\n")
    response = page_client.post("/tasks/demo/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    demo = Task.objects.get(pk=response["Location"].split("/")[2])
    wait_for_task(runtime_host, demo.id)
    user = demo.created_by
    interview = start_task(workflow="requirement_review", description="给订单列表增加导出功能", user=user)
    confirm = start_task(
        workflow="requirement_review",
        input_markdown=sample_requirement("zh-hans"),
        decision_mode="confirm",
        user=user,
    )
    wait_for_pending(runtime_host, interview.id, "interview")
    wait_for_pending(runtime_host, confirm.id, "decisions")
    card = CapabilityCard.objects.filter(skill__isnull=True).first().capability_id
    values = {
        "role": "coderA",
        "capability_id": card,
        "which": "invoke",
        "slug": "shop",
        "template_type": "persona",
        "version": "1.0.0",
        "skill_id": "zh_glossary",
        "action": "deactivate",
        "change_id": str(ConfigChange.objects.order_by("pk").first().pk),
        "task_id": demo.id,
        "context_id": ExecutionContext.objects.filter(task_id=demo.id, role="pm").first().id,
        "name": Artifact.objects.filter(task=demo, name="requirement_final.md").get().name,
    }
    paths = [
        "/permissions/invoke/?project=shop",
        "/login/",
        f"/tasks/{demo.id}/diff/?a=requirement.md&b=requirement_final.md",
        f"/tasks/{interview.id}/",
        f"/tasks/{confirm.id}/",
        f"/live/?task={confirm.id}",
        "/config/changes/?config_type=builtin",
    ]
    for pattern in page_patterns():
        if (path := page_path(pattern, values)) is not None:
            paths.append(path)
    return paths


def test_every_chinese_page_is_in_chinese_with_finished_and_waiting_runs(page_client, world_with_runs):
    """Issue 32 "Every word in the page's language": every page (tests/pages.py) over the
    world above, asked in Chinese, shows no English word outside identifiers and
    ``ALLOWED_WORDS`` (``english_words``): statuses, badges, labels, rule reasons, role and
    capability names and descriptions, dates."""
    from django.contrib.auth import get_user_model

    from capabilities.models import AgentRole

    slugs = frozenset(
        [
            *AgentRole.objects.values_list("role", flat=True),
            *Project.objects.values_list("slug", flat=True),
            *get_user_model().objects.values_list("username", flat=True),
        ]
    )
    found, checked = {}, 0
    for path in world_with_runs:
        response = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans,zh;q=0.9")
        if not takes_get(response) or "html" not in response.get("Content-Type", ""):
            continue
        assert response.status_code == 200, path
        checked += 1
        if words := english_words(response.content.decode(), slugs):
            found[path] = sorted(set(words))
    assert checked > 40
    assert found == {}, "\n".join(f"{path}: {' '.join(words)}" for path, words in found.items())


def test_roles_and_capabilities_read_in_the_page_language_and_are_edited_in_both(page_client, api, builtin):
    """Issue 32: the built-in team ships its names and descriptions in both languages (data:
    capabilities/builtin/names_zh.yaml); every page shows the one of its language; the role
    page and the API edit both; a blank Chinese text falls back to the English."""
    zh, en = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}, {"HTTP_ACCEPT_LANGUAGE": "en"}
    dashboard = page_client.get("/", **zh).content.decode()
    assert "主控（总调度）" in dashboard and "Main (Supervisor)" not in dashboard
    assert "接收任务，拆解任务" in dashboard and ">任务编排</span>" in dashboard
    assert "Main (Supervisor)" in page_client.get("/", **en).content.decode()
    for path in ("/roles/", "/prompts/", "/knowledge/", "/tokens/", "/capabilities/", "/permissions/invoke/"):
        assert "数据库管理员" in page_client.get(path, **zh).content.decode(), path
    assert "表结构查询" in page_client.get("/capabilities/schema_query/", **zh).content.decode()

    doc = api.get("/api/v1/roles/dba").json()
    assert doc["display_name_zh"] == "数据库管理员" and doc["responsibilities_zh"] == ["数据库设计", "迁移脚本"]
    edited = api.patch(
        "/api/v1/roles/dba",
        {"version": doc["version"], "display_name_zh": "数据守护者", "responsibilities_zh": "建模\n迁移"},
        format="json",
    )
    assert edited.status_code == 200, edited.content
    assert edited.json()["responsibilities_zh"] == ["建模", "迁移"]
    role = page_client.get("/roles/dba/", **zh).content.decode()
    assert "数据守护者" in role and "<li>建模</li>" in role
    assert 'name="display_name_zh" value="数据守护者"' in role
    assert "Database Administrator" in page_client.get("/roles/dba/", **en).content.decode()
    refused = api.patch(
        "/api/v1/roles/dba", {"version": edited.json()["version"], "display_name_zh": "x" * 101}, format="json"
    )
    assert refused.status_code == 400 and "display_name_zh" in refused.json()["errors"]

    version = api.get("/api/v1/roles/dba").json()["version"]
    page_client.post("/roles/dba/edit/", {"version": version, "display_name": "Database Administrator", "emoji": "🗄️"})
    assert "Database Administrator" in page_client.get("/roles/dba/", **zh).content.decode()  # blank: the English


def test_every_builtin_role_and_card_has_its_chinese_name_and_description(builtin):
    from capabilities.models import AgentRole

    roles = AgentRole.objects.filter(role__in=["main", "pm", "dba", "ai_expert", "consolidator"])
    assert all(CJK.search(r.display_name_zh) and CJK.search(r.description_zh) and r.responsibilities_zh for r in roles)
    cards = CapabilityCard.objects.filter(is_builtin=True)
    assert cards.count() > 30
    assert [c.capability_id for c in cards if not (CJK.search(c.name_zh) and CJK.search(c.description_zh))] == []


def test_deadlines_read_in_the_locale_format_and_the_operator_zone():
    """Issue 32: "等待至 十二月 5, 20:47 UTC" becomes "12月5日 20:47" in the operator's zone."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from django.template import Context, Template
    from django.utils import timezone, translation

    when = datetime(2026, 12, 5, 12, 47, tzinfo=UTC)
    shown = Template("{% load live_tags %}{{ when|short_time_zone }}")
    with translation.override("zh-hans"), timezone.override(ZoneInfo("Asia/Shanghai")):
        assert ">12月5日 20:47 Asia/Shanghai</time>" in shown.render(Context({"when": when}))
    with translation.override("en"):
        assert ">Dec 5, 12:47 UTC</time>" in shown.render(Context({"when": when}))


def test_identifiers_read_as_words_in_the_page_language():
    """pgettext vocabularies (teamclaw.labels): the same English word in two contexts, the
    merge rule behind a decision, and an identifier no vocabulary lists shown as it is."""
    from django.utils import translation

    from teamclaw.labels import label, labels

    with translation.override("zh-hans"):
        assert label("rejected", "status") == "已拒绝" and label("rejected", "decision") == "不采纳"
        assert label("waiting_user", "status") == "等您处理" and label("open_point", "decision") == "待确认事项"
        assert label("rule_1_optimise", "merge rule") == "它细化了需求，且专家意见一致。"
        assert label("business", "wording") == "用业务语言提问" and label("supplement", "stance") == "补充"
        assert labels(["cards", "invoke_cells"], "config") == "能力卡片、调用权限"
        assert label("brand_new_state", "status") == "brand_new_state" and label(None, "status") == ""
    assert label("waiting_user", "status") == "waiting for you"
    assert labels(["cards", "invoke_cells"], "config") == "capability cards, invoke permissions"
    with pytest.raises(KeyError):
        label("running", "no such vocabulary")


# --- Issue 32, the operator's walk-through in Chinese (make run, demo, outcome, replay, knowledge) ---

ASCII_PUNCTUATION = re.compile(r"[\u4e00-\u9fff]\s?[(,:;?!]|[(]\s?[\u4e00-\u9fff]|[\u4e00-\u9fff）]\s?\)")
"""ASCII brackets, commas, colons, semicolons, question and exclamation marks against a
Chinese character: Chinese text takes the full-width ones (（），：；？！)."""

ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d")


def ascii_punctuation(html: str) -> list[str]:
    """The visible texts of a Chinese page (:class:`ChineseText`) with ASCII punctuation
    against Chinese (``ASCII_PUNCTUATION``)."""
    return [text for text in visible_texts(html, ChineseText) if ASCII_PUNCTUATION.search(text)]


def slugs_shown(html: str, slugs: frozenset[str]) -> list[str]:
    """Role slugs and workflow ids a reader sees as words (text nodes and options, not
    ``<code>`` or ``title`` tooltips, where an identifier may stay)."""
    found = []
    for text in visible_texts(html, ProseChinese):
        for token in re.split(r"[\s\u3000-\u303f\uff00-\uffef“”·→]+", text):
            if token.strip("()（）:：,，") in slugs:
                found.append(token)
    return found


class ProseChinese(ChineseText):
    """:class:`ChineseText` less ``title`` tooltips."""

    ATTRIBUTES = ("placeholder", "aria-label")


def test_the_walkthrough_checks_find_what_they_look_for():
    assert ascii_punctuation("<p>记忆 (0 轮)</p><p>阶段:评审</p><p>第 1 行, 第 2 行</p><p>token (est.) ok</p>") == [
        "记忆 (0 轮)",
        "阶段:评审",
        "第 1 行, 第 2 行",
    ]
    assert ascii_punctuation("<p>记忆（0 轮）</p><code>见 (x)</code><p>%(name)s 个</p>") == []
    html = '<select><option value="pm">产品经理</option><option>requirement_review</option></select><p>由 pm 生成</p>'
    html += '<p title="pm"><code>pm</code> 产品经理</p>'
    assert slugs_shown(html, frozenset({"pm", "requirement_review"})) == ["requirement_review", "pm"]


def test_the_operator_walkthrough_reads_plainly_in_chinese(page_client, world_with_runs):
    """The operator's walk-through in Chinese: role and workflow names, not slugs, in filter
    dropdowns and tables (the slug stays as the value or a tooltip); full-width punctuation
    in Chinese text; replay times in the operator's zone, never raw ISO; the interview's
    round worded for its audience; a card waiting for the operator says so."""
    from capabilities.models import AgentRole
    from monitoring.models import Task
    from teamclaw.workflows import WORKFLOWS

    slugs = frozenset([*AgentRole.objects.values_list("role", flat=True), *WORKFLOWS])
    shown, punctuation = {}, {}
    pages = {}
    for path in world_with_runs:
        response = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans,zh;q=0.9")
        if not takes_get(response) or "html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        pages[path] = html
        if found := slugs_shown(html, slugs):
            shown[path] = sorted(set(found))
        if found := ascii_punctuation(html):
            punctuation[path] = found[:5]
    assert shown == {}, "\n".join(f"{path}: {' '.join(words)}" for path, words in shown.items())
    assert punctuation == {}, "\n".join(f"{path}: {texts}" for path, texts in punctuation.items())

    demo = Task.objects.filter(title__startswith="演示").order_by("created_at").first()
    for path in (f"/tasks/{demo.id}/replay/", next(p for p in pages if p.startswith("/replay/"))):
        html = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        assert not [t for t in visible_texts(html, ProseChinese) if ISO_TIME.search(t)], path
        assert re.search(r'data-format="moment_zone"[^>]*>12月|data-format="moment_zone"[^>]*>\d+月\d+日', html), path
    interview = Task.objects.get(workflow="requirement_review", description="给订单列表增加导出功能")
    page = page_client.get(f"/tasks/{interview.id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "（用业务语言提问）" in page and "措辞" not in page
    assert "等待您的回答" in page and "正在撰写" not in page
    assert "需求评审" in page


def test_a_context_card_counts_what_it_labels(page_client, world_with_runs):
    """The card's call count says what it counts: offline, the calls the agent answered (one
    estimate each), as the trace's "calls answered"; main answered the operator's one call
    and made fifteen, which only the trace lists."""
    from monitoring.models import Task

    demo = Task.objects.filter(title__startswith="演示").order_by("created_at").first()
    page = page_client.get(f"/tasks/{demo.id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "应答 1 次调用" in page and "应答 4 次调用" in page
    assert not re.search(r"· (?<!应答 )\d+ 次调用</span>", page)
    trace = page_client.get(f"/tasks/{demo.id}/trace/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "应答 4 次调用" in trace
    assert '<span class="badge">工具使用</span>' in trace and ">tool_use<" not in trace  # a call's kind, worded
    english = page_client.get(f"/tasks/{demo.id}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "1 call answered" in english and "4 calls answered" in english


def test_the_readme_demo_estimate_is_the_demo_measured(world_with_runs):
    """README "~N tokens": the offline demo's estimate, within 10 % of a run's."""
    from monitoring.models import Task

    demo = Task.objects.filter(title__startswith="演示").order_by("created_at").first()
    readme = (Path(settings.BASE_DIR) / "README.md").read_text(encoding="utf-8")
    stated = int(re.search(r"demo's honest estimate \(~([\d,]+)", readme).group(1).replace(",", ""))
    assert abs(stated - demo.tokens_used) <= 0.1 * demo.tokens_used, demo.tokens_used


def test_an_interview_coverage_map_with_nothing_asked_says_so(builtin):
    from django.template.loader import render_to_string
    from django.utils import translation

    request = {
        "round": 1,
        "style": "business",
        "questions": [{"id": "q1", "text": "目标用户是谁？"}],
        "coverage": [{"category": "users", "label": "用户", "status": "missing", "answered": 0, "asked": 0}],
    }
    from datetime import UTC, datetime

    at = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    cf = {"id": 1, "tool": "interview", "status": "pending", "role": "main", "task_id": "t1", "request": request}
    cf.update(created_at=at, expires_at=at)
    with translation.override("zh-hans"):
        html = render_to_string("monitoring/_operator_input.html", {"cf": cf})
    # Questions are shown below the map: it never says that none has been asked (issue 27).
    assert "0 / 0" not in html and "还没有提出任何问题" not in html and "回答下面的问题后" in html
    assert "主控" in html and "<strong>main</strong>" not in html
    with translation.override("zh-hans"):
        empty = {**cf, "request": {**request, "questions": []}}
        html = render_to_string("monitoring/_operator_input.html", {"cf": empty})
    assert "还没有提出任何问题" in html
    request["coverage"].append({"category": "goals", "label": "目标", "status": "partial", "answered": 1, "asked": 2})
    with translation.override("zh-hans"):
        html = render_to_string("monitoring/_operator_input.html", {"cf": cf})
    assert "1 / 2" in html and "尚未提问" in html and "0 / 0" not in html


def test_chinese_catalogs_address_the_reader_as_nin_and_use_full_width_punctuation():
    """One form of address (您) in every Chinese message, and no ASCII bracket, comma,
    colon or semicolon against Chinese (``yesno`` lists excepted: Django splits them at ",")."""
    informal, ascii_marks = [], []
    for name in ("django", "djangojs"):
        for entry in entries(name):
            for text in entry.strings:
                if "你" in text:
                    informal.append(text)
                plain = re.sub(r"<code>.*?</code>|<[^>]*>|%\(\w+\)[sd]", "", text)
                if ASCII_PUNCTUATION.search(plain) and not re.fullmatch(r"[^,]+,[^,]+(,[^,]+)?", text):
                    ascii_marks.append(text)
    assert informal == [] and ascii_marks == []
    workflows = Path(settings.BASE_DIR) / "teamclaw" / "workflows"
    said = [str(path.relative_to(workflows)) for path in workflows.rglob("*.yaml") if "你" in path.read_text("utf-8")]
    assert said == []  # the interview's questions, reasons and follow-ups speak to the operator too


CREDENTIAL = re.compile(
    r"role token|bearer|issu\w* (a )?token|token “|its token|token of|revoke the token|this token|token acts"
    r"|give the token",
    re.I,
)
"""An English message about a credential (a role token, a bearer token), not the model's unit."""


def test_token_reads_as_one_word_per_meaning_in_chinese():
    """Issue 32: a Chinese message says 词元 for what a model counts and 令牌 for a credential,
    never the Latin word ``token`` (the pages mixed "token", "Token" and 词元); identifiers
    (``<token>``, ``TEAMCLAW_MEMORY_TOKENS``, ``%(tokens)s``, ``role-tokens``) stay as written."""
    latin, wrong = [], []
    for name in ("django", "djangojs"):
        for entry in entries(name):
            if "token" not in entry.msgid.lower():
                continue
            credential = bool(CREDENTIAL.search(entry.msgid + (entry.plural or "")))
            for text in entry.strings:
                prose = re.sub(
                    r"<code>.*?</code>|&lt;token&gt;|<token>|%\(\w+\)[sd]|[\w/-]*_TOKENS|[\w-]+-tokens|memory_tokens",
                    "",
                    text,
                )
                if re.search(r"token", prose, re.I):
                    latin.append(text)
                if ("词元" if credential else "令牌") in prose:
                    wrong.append(text)
    assert latin == [] and wrong == []
    said = {e.msgid: e.strings[0] for e in entries("django")}
    assert said["Role tokens"] == "角色令牌" and said["Token stats"] == "词元统计" and said["tokens"] == "词元"


def test_knowledge_relevance_reads_as_a_percent_in_both_languages(page_client, builtin):
    from knowledge.demo_knowledge import load_demo_knowledge

    load_demo_knowledge()
    for language, word in (("zh-hans", "相关度"), ("en", "relevance")):
        html = page_client.get("/knowledge/?q=表名怎么命名", HTTP_ACCEPT_LANGUAGE=language).content.decode()
        texts = " ".join(visible_texts(html, ProseText))
        assert f"{word} 100%" in texts, language
        assert not re.search(r"\b0\.\d{3,}", texts), language
    from knowledge.search import relevance

    assert (relevance(0.032787, 0.032787), relevance(0.016129, 0.032787), relevance(0, 0.1), relevance(1, 0)) == (
        100,
        49,
        0,
        0,
    )


def test_prompt_refusals_and_what_if_effects_read_in_chinese(page_client, builtin):
    """A save refused for an undeclared name, and a staged matrix change's effects, on
    Chinese pages: the reasons and labels in Chinese (the API keeps its English)."""
    from web.prompt_refusals import REASONS, reason_words

    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    response = page_client.post(
        "/prompts/pm/persona/edit/",
        {"content": "{{ tnoe }}", "variables": "[]", "language": "zh", "bump": "patch", "action": "activate"},
        **zh,
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "无法启用" in html and "cannot be activated" not in html
    from django.utils import translation

    with translation.override("zh-hans"):
        for pattern, wording in REASONS:
            assert re.search(r"[\u4e00-\u9fff]", str(wording)), pattern.pattern
        assert reason_words("version 1.2.0 is already active") == "版本 1.2.0 已经启用"
        assert reason_words("something new") == "something new"
        from django.template.loader import render_to_string

        report = {
            "days": 7,
            "considered": 3,
            "traffic": "all",
            "summary": {"denied": 1, "allowed": 0, "confirm": 0},
            "groups": [
                {
                    "caller": "main",
                    "callee": "pm",
                    "effect": "denied",
                    "label": "would now be denied",
                    "count": 1,
                    "statuses": {"delivered": 1},
                    "capabilities": ["expert_review"],
                    "projects": ["(global)"],
                }
            ],
        }
        html = render_to_string(
            "capabilities/_what_if.html",
            {"staged": [(("main", "pm"), False)], "report": report, "kind": {"name": "invoke_matrix"}},
        )
    assert "现在会被拒绝" in html and "would now be denied" not in html and "已送达 1" in html
    assert "主控" in html and "产品经理" in html


# --- Issue 32, the second walk in Chinese (the same demo, prompt, role, knowledge, replay,
# dashboard and permission pages): what a new operator still met, as rows ---

PLAIN_WALK = (
    # (page or "*" for every page, text a reader must not see, text the page must show or "")
    ("*", "question(s) in", ""),
    ("*", "experts reviewed", ""),
    ("/prompts/main/system_prompt/", "Project name", "项目名称"),
    ("/prompts/main/system_prompt/", "The role's display name", "角色的显示名称"),
    ("/prompts/main/system_prompt/", "Token（", "词元（任务）"),
    ("/prompts/main/system_prompt/", "（main）", ""),
    ("/roles/pm/", "TEAMCLAW_MEMORY_TOKENS", "服务器为所有角色设定的默认值"),
    ("/roles/pm/", "offline", "服务器的默认执行器"),
    ("/knowledge/", "倒数排名", ""),
    ("/knowledge/", "同一种搜索", ""),
    ("replay", "API 调用", "未调用模型"),
    ("/", "OPENAI_BASE_URL 即可使用模型", "模型服务的地址"),
    ("/permissions/invoke/", "已暂存 尚未保存", "图例："),
)
"""Rows of the walk: on the page (``"replay"``: a task's replay), the visible text (tooltips
and ``<code>`` aside) has no ``must_not`` and, where given, has ``must``."""

CHINESE_THEN_FULL_STOP = re.compile(r"[\u4e00-\u9fff]\.(?!\w)")


def _seen(html: str) -> str:
    return " ".join(visible_texts(html, ProseChinese))


def test_the_second_chinese_walk_meets_no_english_jargon_or_settings(page_client, world_with_runs):
    from monitoring.models import Task
    from prompts.models import PromptVersion

    demo = Task.objects.filter(title__startswith="演示").order_by("created_at").first()
    replay = f"/tasks/{demo.id}/replay/"
    paths = sorted({*world_with_runs, replay, "/prompts/main/system_prompt/", "/roles/pm/", "/knowledge/", "/"})
    seen = {}
    for path in paths:
        response = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans,zh;q=0.9")
        if takes_get(response) and "html" in response.get("Content-Type", ""):
            seen[path] = _seen(response.content.decode())
    wrong = []
    for page, must_not, must in PLAIN_WALK:
        pages = [p for p in seen if page == "*" or p == page or (page == "replay" and p == replay)]
        assert pages, page
        wrong += [f"{p}: shows {must_not!r}" for p in pages if must_not in seen[p]]
        wrong += [f"{p}: lacks {must!r}" for p in pages if must and must not in seen[p]]
    wrong += [f"{p}: Chinese ends with '.'" for p, text in seen.items() if CHINESE_THEN_FULL_STOP.search(text)]
    assert wrong == [], "\n".join(wrong)

    # The role page says what each prompt template's text is written in, not a stored default.
    persona = PromptVersion.objects.get(
        template__role__role="pm", template__template_type="persona", template__project=None, is_active=True
    )
    PromptVersion.objects.filter(pk=persona.pk).update(content="你是一名严谨的产品经理。")
    page = page_client.get("/roles/pm/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert re.search(r'/prompts/pm/persona/">人设</a></td><td>[^<]*</td><td>中文</td>', page)
    assert re.search(r'/prompts/pm/system_prompt/">系统提示词</a></td><td>[^<]*</td><td>英文</td>', page)


@pytest.mark.parametrize(
    ("content", "values", "framing", "detail"),
    [
        ("第一行\n{{ who }\n", "{}", "第 2 行：模板有语法错误", "unexpected '}'"),
        ("{{ project_name }}\n{{ 1 / 0 }}", "{}", "第 2 行：模板渲染时出错", "ZeroDivisionError: division by zero"),
        ("{{ who }}", "[1]", "必须是 JSON 对象", ""),
    ],
)
def test_the_prompt_preview_tells_a_render_error_in_chinese_with_its_line(
    page_client, builtin, content, values, framing, detail
):
    """Issue 32: the editor's live preview on a Chinese page frames a failed render in Chinese
    with the template line, and quotes the engine's own message (marked English) as a detail;
    the Chinese walk (``english_words``) then finds nothing outside that quote."""
    response = page_client.post(
        "/prompts/pm/persona/edit/preview/",
        {"content": content, "variables": "[]", "values": values},
        HTTP_HX_REQUEST="true",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    html = response.content.decode()
    error = re.search(r'<p class="error" id="preview-error">(.*?)</p>', html, re.S).group(1)
    assert framing in error
    if detail:
        assert f'<q lang="en" translate="no" id="preview-error-detail">{escape(detail)}</q>' in error
    assert english_words(html) == []


def test_the_prompt_preview_refuses_a_template_over_the_limit_through_its_form(page_client, builtin):
    """The preview binds ``PromptEditForm`` (issue 32: page input through Django forms): a
    template over its limit is refused by the form, in the page's language, before any render."""
    from prompts.render import MAX_TEMPLATE_CHARS

    response = page_client.post(
        "/prompts/pm/persona/edit/preview/",
        {"content": "x" * (MAX_TEMPLATE_CHARS + 1), "variables": "[]", "values": "{}"},
        HTTP_HX_REQUEST="true",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    error = re.search(r'<p class="error" id="preview-error">(.*?)</p>', response.content.decode(), re.S).group(1)
    assert f"{MAX_TEMPLATE_CHARS:,}".replace(",", "") in error.replace(",", "") and "确保" in error
