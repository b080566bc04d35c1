"""Shared fixtures: the test database with the built-in team (loaded once a session, see
tests/database.py), users and clients, a fresh runtime host per test that needs one."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, TransactionTestCase
from django.utils import translation
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the default language (English): a request through the test client
    leaves the language it asked for (``Accept-Language: zh-hans``) active in this thread, so
    code called directly afterwards would answer in Chinese depending on test order."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests create many users; a fast hasher keeps setup in milliseconds (never in production)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_model_from_the_environment(settings, tmp_path_factory):
    """Tests never reach a model the developer's environment points at: the offline brain is
    the default unless a test configures a model (its local test server) itself. Project
    folders (files agents write) go to a temporary folder, not the developer's data folder.
    Knowledge is ranked by full text alone (embeddings ``off``) unless a test turns the
    ``embeddings`` extra on (tests/knowledge/test_hybrid.py): its vectors take seconds per
    hundred chunks to make."""
    settings.TEAMCLAW = {
        **settings.TEAMCLAW,
        "EXECUTOR": "offline",
        "OPENAI_BASE_URL": "",
        "OPENAI_API_KEY": "",
        "MODEL_ENDPOINTS": {},
        "KNOWLEDGE_EMBEDDINGS": "off",
        "PROJECTS_ROOT": tmp_path_factory.getbasetemp() / "projects",
    }


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, migrated, with the built-in team loaded once for the session; a
    test that commits leaves it as it found it (tests/database.py)."""
    from tests.database import PRISTINE, restore_instead_of_flush

    with django_db_blocker.unblock():
        PRISTINE.capture()
    with mock.patch.object(TransactionTestCase, "_fixture_teardown", restore_instead_of_flush):
        yield
    # A host a page test started lazily would otherwise poll on after the session, into a
    # database pytest already closed ("the runtime worker's poll failed" at exit).
    from runs import host as host_module

    with django_db_blocker.unblock():
        host_module.reset_host()
    PRISTINE.close()


@pytest.fixture
def builtin(db):
    """The built-in team in the test database (loaded at the start of the session); the
    rows ``load_builtin`` created then, per kind."""
    from tests.database import PRISTINE

    return PRISTINE.counts


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("operator", password=PASSWORD, is_staff=True)


@pytest.fixture
def viewer_user(db):
    return get_user_model().objects.create_user("viewer", password=PASSWORD)


@pytest.fixture
def page_client(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def token_client(user) -> APIClient:
    """An API client that sends ``user``'s token, as a program would."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(staff_user) -> APIClient:
    return token_client(staff_user)


@pytest.fixture
def viewer_api(viewer_user) -> APIClient:
    """The API as a signed-in user without the staff flag."""
    return token_client(viewer_user)


@pytest.fixture(autouse=True)
def no_runtime_left_running(request) -> None:
    """Pages start the process's runtime host lazily, and its worker then polls for tasks; left
    running from an earlier test it would claim the queued tasks a later test makes. Each
    transactional test (by fixture or by ``django_db(transaction=True)``; outside the browser
    tests, whose server keeps its host) starts without one."""
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or bool(marker and marker.kwargs.get("transaction"))
    if transactional and request.node.get_closest_marker("browser") is None:
        from runs import host as host_module

        if host_module.current_host() is not None:
            request.getfixturevalue("transactional_db")  # stopping it writes its workers' leases
            host_module.reset_host()


@pytest.fixture
def runtime_host(transactional_db, builtin) -> Iterator[object]:
    """A fresh RuntimeHost (runtime thread + recorder) for this test, stopped afterwards."""
    from runs import host as host_module

    host_module.reset_host()
    host = host_module.get_host()
    yield host
    host_module.reset_host()
