"""Platform API v1, a deployment's env variables: ``GET|PUT|PATCH /api/v1/deployments/{id}/env-vars``, stored
encrypted, secrets' values answered ``[ENCRYPTED]``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from embedadmin.accounts import selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.errors import BadRequest
from embedadmin.platform.openapi import PAGE_PARAMETERS, many, page_of, page_operation, whole
from embedadmin.platform.platform_view import (
    BODY_INVALID,
    DEPLOYMENT_NOT_FOUND,
    IN_MEMORY_PAGE,
    PlatformView,
    page_of_list,
)

SECRET_NAME_PARTS = ("PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL")


def env_variable_is_secret(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


ENV_VARIABLE = inline_serializer(
    "EnvVariable",
    {"name": serializers.CharField(), "value": serializers.CharField(help_text="[ENCRYPTED] for a secret's")},
)
ENV_VARIABLES = page_of("EnvVariablePage", ENV_VARIABLE, **IN_MEMORY_PAGE)
ENV_VARIABLES_PUT = inline_serializer(
    "EnvVariables",
    {
        "env_variables": many(
            inline_serializer(
                "EnvVariableInput",
                {
                    "name": serializers.RegexField(r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=255),
                    "value": serializers.CharField(max_length=32768, allow_blank=True),
                },
            )
        )
    },
)


class EnvVariablesView(PlatformView):
    """``GET|PUT /api/v1/deployments/{id}/env-vars``: stored encrypted; values of names containing PASS, SECRET,
    TOKEN, KEY or CREDENTIAL are answered ``[ENCRYPTED]``. PUT ``{env_variables: [{name, value}]}`` upserts by
    name (others keep their values) and answers the list. Nothing in this install reads them yet."""

    audit_resource = "env_variables"
    audit_verbs = {"PUT": "upsert", "PATCH": "upsert"}
    audit_id_kwarg = "deployment_id"

    def _list(self, request: PlatformRequest, deployment: Deployment) -> Response:
        rows = list(selectors.env_variables_of(deployment=deployment))

        def item(row: Any) -> dict[str, str]:
            if env_variable_is_secret(row.name):
                return {"name": row.name, "value": accounts.ENCRYPTED_PLACEHOLDER}
            return {"name": row.name, "value": selectors.env_variable_value(variable=row)}

        return Response(page_of_list(rows, params=request.query_params, key=lambda r: r.name, serialize=item))

    @page_operation(ENV_VARIABLES, errors={404: DEPLOYMENT_NOT_FOUND})
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        return self._list(request, self.deployment(request, deployment_id))

    @extend_schema(
        request=whole(type(ENV_VARIABLES_PUT)),
        parameters=PAGE_PARAMETERS,
        responses={200: ENV_VARIABLES, 400: BODY_INVALID, 404: DEPLOYMENT_NOT_FOUND},
    )
    def put(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        body = json_object_body(request, fields=("env_variables",))
        given = body.get("env_variables")
        if not isinstance(given, list):
            raise BadRequest("env_variables: must be a list of {name, value}")
        variables: list[tuple[str, str]] = []
        for index, entry in enumerate(given):
            if not isinstance(entry, dict) or set(entry) != {"name", "value"}:
                raise BadRequest(f"env_variables[{index}]: must be an object {{name, value}}")
            name, value = entry["name"], entry["value"]
            if not isinstance(name, str) or not 0 < len(name) <= 255:
                raise BadRequest(f"env_variables[{index}].name: must be a string of 1 to 255 characters")
            if not isinstance(value, str) or len(value) > 32_768:
                raise BadRequest(f"env_variables[{index}].value: must be a string of at most 32768 characters")
            variables.append((name, value))
        accounts.env_variables_set(deployment=deployment, variables=variables)
        return self._list(request, deployment)

    patch = put
