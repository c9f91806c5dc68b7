"""The edge kit (embedadmin/core/edge): one header reader, one body reader, one id rule, one way to write a moment."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.test import RequestFactory
from django.urls import resolve
from django.urls.exceptions import Resolver404
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from embedadmin.core.edge.authorization import (
    API_KEY,
    EMBED_TOKEN,
    PLATFORM_TOKEN,
    CredentialRefused,
    Presented,
    presented_credential,
    token_header,
)
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.ids import row_id
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest
from embedadmin.core.fields import MAX_BIGINT

BOTH = (API_KEY, EMBED_TOKEN)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Api-Key eak_1", Presented(API_KEY, "eak_1")),
        ("api-key   eak_1  ", Presented(API_KEY, "eak_1")),  # any case; the value trimmed
        ("EMBED-TOKEN a.b.c", Presented(EMBED_TOKEN, "a.b.c")),
        (None, None),
        ("", None),
        ("   ", None),
    ],
)
def test_a_header_of_an_accepted_scheme_gives_its_credential(header, expected):
    assert presented_credential(header, accept=BOTH) == expected


@pytest.mark.parametrize(
    "header",
    ["Bearer x", "Api-Key", "Api-Key   ", "eak_1", "Api-Key eak\x00", "Api-Key sécret", "Api-Key a\tb"],
)
def test_anything_else_is_refused_naming_the_accepted_forms(header):
    with pytest.raises(CredentialRefused) as refused:
        presented_credential(header, accept=BOTH)

    assert refused.value.message == "Authorization header must be 'Api-Key <key>' or 'Embed-Token <embed token>'"


def test_a_bare_token_and_any_scheme_are_taken_only_where_the_door_says_so():
    # Cube's reading of its Authorization header: the token alone, or after any first word.
    assert presented_credential("a.b.c", accept=(PLATFORM_TOKEN,), bare=True) == Presented(None, "a.b.c")
    assert presented_credential("Token a.b.c", accept=(PLATFORM_TOKEN,), any_scheme=True) == Presented(
        PLATFORM_TOKEN, "a.b.c"
    )
    with pytest.raises(CredentialRefused):
        presented_credential("Token a.b.c", accept=(PLATFORM_TOKEN,))
    with pytest.raises(CredentialRefused):
        presented_credential("a.b.c\x00", accept=(PLATFORM_TOKEN,), bare=True)


def test_a_single_token_header_is_one_printable_word():
    assert token_header(" a.b.c ", header="X-Service-Auth-Token") == "a.b.c"
    assert token_header(None, header="X-Service-Auth-Token") is None
    for value in ("Bearer a.b.c", "a\x01b"):
        with pytest.raises(CredentialRefused, match="X-Service-Auth-Token header must be '<token>'"):
            token_header(value, header="X-Service-Auth-Token")


def _plain(body: bytes):
    return RequestFactory().post("/x", data=body, content_type="application/json")


def _drf(body: bytes):
    return Request(_plain(body), parsers=[JSONParser()])


@pytest.mark.parametrize("request_of", [_plain, _drf], ids=["plain view", "DRF view"])
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1]", "The body must be a JSON object"),
        (b'{"grant": "g", "bogus": 1, "other": 2}', "Unknown fields: bogus, other"),
        (b'{"grant": "g\\u0000"}', "The body must not contain NUL characters"),
    ],
)
def test_a_body_is_one_json_object_of_the_endpoints_fields(request_of, body, message):
    with pytest.raises(BadRequest) as refused:
        json_object_body(request_of(body), fields=("grant", "state"))

    assert refused.value.message == message


def test_a_plain_body_that_is_not_json_or_nests_too_deeply_is_refused_with_why(settings):
    settings.LIMITS = {**settings.LIMITS, "MAX_JSON_DEPTH": 3}
    with pytest.raises(BadRequest, match=r"^Invalid JSON body: Expecting value: line 1 column 1 \(char 0\)$"):
        json_object_body(_plain(b"nope"), fields=None)
    with pytest.raises(BadRequest, match=r"^Invalid JSON body: nested too deeply$"):
        json_object_body(_plain(json.dumps({"a": [[[[1]]]]}).encode()), fields=None)


def test_ignored_names_are_dropped_before_the_check_and_an_empty_body_is_what_the_endpoint_says():
    body = json_object_body(
        _plain(b'{"query": {}, "sessionSettings": {}}'), fields=("query",), ignore=("sessionSettings",)
    )

    assert body == {"query": {}}
    assert json_object_body(_plain(b""), fields=None, empty={}) == {}
    with pytest.raises(BadRequest, match="The body must be a JSON object"):
        json_object_body(_plain(b""), fields=None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 1),
        ("0042", 42),
        (str(MAX_BIGINT), MAX_BIGINT),
        (str(MAX_BIGINT + 1), None),
        ("1" * 40, None),
        ("²", None),  # a digit to str.isdigit, no id
        ("-1", None),
        ("1.0", None),
        ("", None),
        (7, 7),
        (-7, None),
        (True, None),
    ],
)
def test_a_row_id_is_ascii_digits_within_a_bigint(text, expected):
    assert row_id(text) == expected


def test_the_id_path_converter_matches_only_row_ids():
    assert resolve("/api/v1/api-keys/12").kwargs == {"key_id": 12}
    with pytest.raises(Resolver404):
        resolve(f"/api/v1/api-keys/{MAX_BIGINT + 1}")


def test_a_moment_is_written_in_utc_with_z():
    paris = dt.timezone(dt.timedelta(hours=1))
    assert iso_time(dt.datetime(2026, 11, 29, 10, 0, tzinfo=paris)) == "2026-11-29T09:00:00Z"
    assert iso_time(dt.datetime(2026, 11, 29, 9, 0, 0, 120000, tzinfo=dt.UTC)) == "2026-11-29T09:00:00.120000Z"
    assert iso_time(dt.datetime(2026, 11, 29, 9, 0)) == "2026-11-29T09:00:00Z"  # naive: the database's UTC
    assert iso_time(None) is None
