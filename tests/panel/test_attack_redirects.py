"""The panel's ``next=`` door (issue 22): after logging in (or out), the panel sends a browser only to its own pages,
whatever the link it was given said."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import Cast

pytestmark = pytest.mark.django_db

HOSTILE_NEXT = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "\\\\evil.example",
    "https:evil.example",
    "javascript:alert(1)",
    "http://testserver@evil.example/",
    " https://evil.example",
]


@pytest.mark.parametrize("target", HOSTILE_NEXT)
def test_login_never_redirects_off_site(acme: Cast, target: str):
    client = Client()

    response = client.post(
        "/admin/login/",
        {"username": acme.created.admin_username, "password": acme.created.admin_password, "next": target},
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/"


def test_login_follows_a_next_within_the_panel(acme: Cast):
    client = Client()

    response = client.post(
        "/admin/login/",
        {"username": acme.created.admin_username, "password": acme.created.admin_password, "next": "/admin/audit/"},
    )

    assert (response.status_code, response["Location"]) == (302, "/admin/audit/")


@pytest.mark.parametrize("target", HOSTILE_NEXT)
def test_logout_never_redirects_off_site(acme_admin: Client, target: str):
    response = acme_admin.post("/admin/logout/", {"next": target})

    assert response.status_code in (200, 302)
    if response.status_code == 302:
        assert not response["Location"].startswith(("http", "//", "/\\", "javascript"))
