"""One rule for an email address (``embedadmin.core.fields.validate_email_address``): RFC 5321/5322 syntax,
whatever the domain. Addresses on special-use and reserved domains (``corp.local`` of an Active Directory forest,
``.test``, ``.internal``) are accepted by every door that takes one: SCIM, the Platform API's users, generate-session,
an embed tenant's users, and the panel (the user model's own field)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from embedadmin.core.fields import StrictEmailField, validate_email_address
from tests.platform.support import USERS_URL, define_in_tenant, mint, tenant_path

SPECIAL_USE = [
    "ad.user@corp.local",
    "qa@example.test",
    "ops@corp.internal",
    "dev@app.localhost",
    "x@host.invalid",
    "x@mail.example",
    "x@hidden.onion",
    "x@localhost",
]
NOT_ADDRESSES = ["", "plain", "@corp.local", "ad.user@", "a b@corp.local", "a@b@corp.local", "a@corp", "a@.local"]


@pytest.mark.parametrize("value", [*SPECIAL_USE, '"ad.user"@corp.local', "x@[192.0.2.1]", "O'Brien+tag@corp.local"])
def test_the_rule_takes_a_syntactically_valid_address_whatever_its_domain(value):
    validate_email_address(value)


@pytest.mark.parametrize("value", NOT_ADDRESSES)
def test_the_rule_refuses_what_is_not_an_address(value):
    with pytest.raises(ValidationError):
        validate_email_address(value)


def test_every_email_field_applies_the_one_rule():
    api_field = StrictEmailField()
    model_field = get_user_model()._meta.get_field("email")

    assert [v for v in api_field.validators if "email" in type(v).__name__.lower()] == [validate_email_address]
    assert validate_email_address in model_field.validators  # the panel's forms validate with the model's field


@pytest.mark.parametrize("email", SPECIAL_USE)
def test_the_platform_api_creates_an_internal_user_with_such_an_address(api, acme, email):
    response = api.post_json(USERS_URL, {"username": "ad-user", "email": email}, **acme.platform_headers)

    assert response.status_code == 201, response.content
    assert get_user_model().objects.get(username="ad-user").email == email


@pytest.mark.parametrize("email", SPECIAL_USE)
def test_generate_session_takes_such_an_address(api, acme, email):
    response = mint(api, acme, externalId="viewer", email=email)

    assert response.status_code == 200, response.content


def test_an_embed_tenant_provisions_a_user_with_such_an_address(api, acme):
    define_in_tenant(api, acme, "north-eu")

    response = api.post_json(
        tenant_path("north-eu", "user"),
        {"externalId": "ad-user", "email": "ad.user@corp.local"},
        **acme.platform_headers,
    )

    assert response.status_code == 201, response.content
    assert response.json()["email"] == "ad.user@corp.local"


@pytest.mark.parametrize("email", NOT_ADDRESSES[1:])
def test_generate_session_still_refuses_what_is_not_an_address(api, acme, email):
    response = mint(api, acme, externalId="viewer", email=email)

    assert response.status_code == 400
    assert response.json() == {"error": "email: Enter a valid email address."}
