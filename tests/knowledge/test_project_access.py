"""Issue 31 item 3: a project's knowledge is for its members (``monitoring.access``): staff
read every source; a non-staff user reads the sources of no project and those of the
projects it is a member of, and a source of any other
project is not found (404), absent from lists and from search results, through the API and
the knowledge page alike."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from capabilities.models import Project
from knowledge.models import KnowledgeSource
from knowledge.sources import Upload, add_source
from tests.helpers import Reader, reader
from tests.knowledge.helpers import librarian

SOURCES = "/api/v1/knowledge/sources"
SEARCH = "/api/v1/knowledge/search"
WORDS = {"global": "heliotrope", "a": "marzipan", "b": "quokkaburrow"}
"""A word only each source holds, so a search for it finds that source or nothing."""


@dataclass
class Library:
    sources: dict[str, KnowledgeSource]
    staff: Reader
    member_a: Reader
    member_b: Reader


def document(owner: str) -> Upload:
    text = f"# Notes of {owner}\n\nThe {WORDS[owner]} procedure is written down here.\n"
    return Upload(f"{owner}-notes.md", "text/markdown", text.encode())


@pytest.fixture
def library(db, staff_user) -> Library:
    """Projects ``a`` and ``b`` with a source each, a role's source (no project), and a
    non-staff member of each project."""
    librarian()
    users = get_user_model().objects
    sources = {"global": add_source(document("global"), role="librarian", project=None, load_level="full")}
    for slug in ("a", "b"):
        project = Project.objects.create(slug=slug, name=f"Project {slug.upper()}")
        sources[slug] = add_source(document(slug), role=None, project=slug, load_level="full")
        member = users.create_user(f"member-{slug}", password="x")
        project.members.add(member)
    return Library(
        sources,
        reader(staff_user),
        reader(users.get(username="member-a")),
        reader(users.get(username="member-b")),
    )


def listed(client: APIClient, **scope: str) -> set[str]:
    response = client.get(SOURCES, scope)
    assert response.status_code == 200
    return {s["name"] for s in response.json()["sources"]}


def found(client: APIClient, owner: str, **scope: str) -> set[str]:
    response = client.get(SEARCH, {"q": WORDS[owner], **scope})
    assert response.status_code == 200
    return {r["source"]["name"] for r in response.json()["results"]}


def names(*owners: str) -> set[str]:
    return {f"{owner}-notes.md" for owner in owners}


def test_the_source_list_holds_the_projects_each_user_may_see(library):
    assert listed(library.staff.api) == names("global", "a", "b")
    assert listed(library.member_a.api) == names("global", "a")
    assert listed(library.member_b.api) == names("global", "b")
    assert listed(library.member_a.api, project="b") == set()


def test_a_source_of_a_project_the_user_may_not_see_is_not_found(library):
    other = library.sources["b"].pk
    refused = library.member_a.api.get(f"{SOURCES}/{other}")
    assert refused.status_code == 404
    assert refused.json()["detail"] == library.member_a.api.get(f"{SOURCES}/999999").json()["detail"].replace(
        "999999", str(other)
    )
    assert library.member_b.api.get(f"{SOURCES}/{other}").status_code == 200
    assert library.member_a.api.get(f"{SOURCES}/{library.sources['global'].pk}").status_code == 200
    assert library.staff.api.get(f"{SOURCES}/{other}").status_code == 200


def test_search_finds_only_what_the_user_may_read(library):
    assert found(library.member_a.api, "b") == set()
    assert found(library.member_a.api, "b", project="b") == set()
    assert found(library.member_a.api, "a") == names("a")
    assert found(library.member_a.api, "global") == names("global")
    assert found(library.member_b.api, "b") == names("b")
    assert found(library.staff.api, "b") == names("b")


def test_a_folder_of_a_project_the_user_may_not_see_is_not_found(library):
    assert library.member_a.api.get("/api/v1/knowledge/folders/b").status_code == 404
    assert library.member_b.api.get("/api/v1/knowledge/folders/b").status_code == 200
    assert library.staff.api.get("/api/v1/knowledge/folders/b").status_code == 200


def test_the_knowledge_page_lists_and_searches_what_the_user_may_read(library):
    page = library.member_a.page.get("/knowledge/").content.decode()
    assert "a-notes.md" in page and "global-notes.md" in page
    assert "b-notes.md" not in page and "Project B" not in page
    passage = f"The {WORDS['b']} procedure"
    for scope in ({}, {"owner": "project:b"}):
        searched = library.member_a.page.get("/knowledge/", {"q": WORDS["b"], **scope}).content.decode()
        assert "b-notes.md" not in searched and passage not in searched
    staff = library.staff.page.get("/knowledge/", {"q": WORDS["b"]}).content.decode()
    assert "b-notes.md" in staff and passage in staff
