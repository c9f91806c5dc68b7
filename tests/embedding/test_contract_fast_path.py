"""The generate-session fast path agrees with the serializer: for any body it either steps aside (None)
or returns exactly the serializer's validated data; and the common request does take it."""

import copy
import random

import pytest

from embedadmin.embedding.serializers import GenerateSessionSerializer, input_from, validated_fast

COMMON = {
    "deploymentId": 7,
    "externalId": "Viewer-1@Example.com",
    "email": "viewer@example.com",
    "userProfile": {"displayName": "Viewer One", "picture": "https://cdn.example.com/v1.png"},
    "embedTenantName": "customer-one",
    "creatorMode": False,
    "userAttributes": [
        {"name": "country", "value": "FR"},
        {"name": "level", "value": 3},
        {"name": "regions", "value": ["emea", "north"]},
        {"name": "cleared", "value": None},
    ],
    "groups": ["analysts", "emea"],
    "securityContext": {"tenantId": 42, "nested": {"a": [1, "b"]}},
    "settings": {"showDashboardChat": None},
}

# Values that the serializer refuses, changes (trims, coerces) or treats specially, for any field.
AWKWARD = [
    None,
    "",
    " ",
    " padded ",
    "tab\t",
    "nul\x00inside",
    "surrogate\ud800",
    "x" * 256,
    "x" * 2049,
    0,
    -1,
    1,
    2**63,
    1.5,
    True,
    False,
    [],
    ["a"],
    [" a"],
    [""],
    [1],
    {},
    {"a": 1},
    {"displayName": "x"},
    {"picture": "ftp://example.com/x.png"},
    {"picture": "https://example.com:99999/x.png"},
    {"showDashboardChat": 1},
    {"showDashboardChat": "true"},
    {"showDashboardChat": True},
    {"name": "country"},
    {"name": "country", "value": "FR", "extra": 1},
    [{"name": " country", "value": 1}],
    [{"name": "country", "value": "nul\x00"}],
    [{"name": "country", "value": {"k\x00": 1}}],
    [{"name": "country"}],
    float("inf"),
    float("nan"),
    {"k": float("-inf")},
    [{"name": "country", "value": float("inf")}],
    [{"name": "country", "value": [1, float("nan")]}],
    "not-an-email",
    "Customer-One",
    "abc",
    "a" * 37,
    "valid-name",
    "someone@example.com",
]


def serializer_result(body):
    serializer = GenerateSessionSerializer(data=copy.deepcopy(body))
    return input_from(serializer.validated_data) if serializer.is_valid() else None


def test_the_common_request_takes_the_fast_path_with_the_serializers_result():
    fast = validated_fast(copy.deepcopy(COMMON))

    assert fast is not None
    assert input_from(fast) == serializer_result(COMMON)
    assert input_from(fast).external_id == "viewer-1@example.com"


@pytest.mark.parametrize("field", sorted({*COMMON, "internalId", "groupDefinitions", "userAttributeDefinitions"}))
def test_every_awkward_value_of_every_field_is_either_left_to_the_serializer_or_parsed_identically(field):
    for value in AWKWARD:
        body = {**copy.deepcopy(COMMON), field: copy.deepcopy(value)}
        fast = validated_fast(copy.deepcopy(body))
        if fast is not None:
            assert input_from(fast) == serializer_result(body), (field, value)


def test_random_mutations_agree_with_the_serializer():
    rng = random.Random(20261121)
    fields = sorted({*COMMON, "internalId", "unknownField"})
    taken = 0
    for _ in range(3000):
        body = copy.deepcopy(COMMON)
        for _ in range(rng.randint(0, 3)):
            field = rng.choice(fields)
            if rng.random() < 0.3:
                body.pop(field, None)
            else:
                body[field] = copy.deepcopy(rng.choice(AWKWARD))
        fast = validated_fast(copy.deepcopy(body))
        if fast is not None:
            taken += 1
            assert input_from(fast) == serializer_result(body), body
    # The check is only meaningful if the fast path was taken for a good share of the bodies.
    assert taken > 300
