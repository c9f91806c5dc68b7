"""The panel's "Who can read what" page: for a deployment and one embed viewer, every cube and view of its model in a
grid (granted or denied with the reason, the members, the row filters in plain words), the panel's face of
``GET /api/v1/deployments/{deploymentId}/access`` (``platform/access.py``).

The viewer's query context is built as their real embed token's is: the claims a read-only generate-session stores
(groups and attribute values resolved in the account's tenant-wide catalog, defaults filled in), made into the
token's payload by ``embedding.services.embed_token_claims``, then ``semantic.serving.routing.viewer_context``, and
each entity is judged by ``semantic.serving.services.semantic_grants``. Nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers

from embedadmin.accounts.models import Account, Deployment
from embedadmin.core.errors import ApiError, BadRequest
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory.models import EmbedTenant, ExternalUser
from embedadmin.directory.values import default_value_parse
from embedadmin.embedding.viewers import EmbedViewer, embed_viewer_grants, embed_viewer_resolve
from embedadmin.panel import tenancy
from embedadmin.panel.forms import AccessViewerForm
from embedadmin.panel.panel_admin import PanelAdmin, page_context
from embedadmin.semantic.query.normalized import Contradiction, FilterCondition, FilterNode
from embedadmin.semantic.results.grants import EntityGrant, MemberGrant

# How a row filter's operator reads in a sentence: (one value, several values).
OPERATOR_WORDS: dict[str, tuple[str, str]] = {
    "equals": ("equals", "is one of"),
    "notEquals": ("is not", "is none of"),
    "contains": ("contains", "contains one of"),
    "notContains": ("does not contain", "contains none of"),
    "startsWith": ("starts with", "starts with one of"),
    "notStartsWith": ("does not start with", "starts with none of"),
    "endsWith": ("ends with", "ends with one of"),
    "notEndsWith": ("does not end with", "ends with none of"),
    "gt": ("is greater than", "is greater than"),
    "gte": ("is at least", "is at least"),
    "lt": ("is less than", "is less than"),
    "lte": ("is at most", "is at most"),
    "set": ("is set", "is set"),
    "notSet": ("is not set", "is not set"),
    "inDateRange": ("is between", "is between"),
    "notInDateRange": ("is not between", "is not between"),
    "onTheDate": ("is on", "is on"),
    "beforeDate": ("is before", "is before"),
    "beforeOrOnDate": ("is on or before", "is on or before"),
    "afterDate": ("is after", "is after"),
    "afterOrOnDate": ("is on or after", "is on or after"),
}
KIND_WORDS = (("measure", "Measures"), ("dimension", "Dimensions"), ("segment", "Segments"))


@dataclass(frozen=True)
class AccessRow:
    """One cube or view of the grid."""

    name: str
    title: str
    type: str
    granted: bool
    reason: str | None
    members: list[tuple[str, list[str]]]  # (kind, short titles), kinds in meta's order
    all_rows: bool
    row_filters: list[str]  # ANDed, in plain words


@dataclass(frozen=True)
class AccessGrid:
    """The page's answer: the viewer, their grid, and the Platform API read that answers the same."""

    deployment: Deployment
    viewer: EmbedViewer
    rows: list[AccessRow]
    api_path: str

    @property
    def attribute_words(self) -> list[str]:
        return [f"{name} = {_words(value)}" for name, value in self.viewer.user_attributes.items()]

    @property
    def security_context_words(self) -> list[str]:
        return [f"{name} = {_words(value)}" for name, value in self.viewer.security_context.items()]


def _words(value: Any) -> str:
    """An attribute or security-context value as a person reads it: lists joined, other JSON as JSON."""
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value)


def _value_words(value: str | None) -> str:
    return "(empty)" if value is None else value


def filter_words(node: FilterNode, titles: dict[str, str], *, nested: bool = False) -> str:
    """A row filter as a sentence: "Users Country equals Germany"."""
    if isinstance(node, FilterCondition):
        values = list(node.values or ())
        one, several = OPERATOR_WORDS.get(node.operator, (node.operator, node.operator))
        words = several if len(values) > 1 else one
        title = titles.get(node.member, node.member)
        if node.operator in ("inDateRange", "notInDateRange") and len(values) == 2:
            return f"{title} {words} {_value_words(values[0])} and {_value_words(values[1])}"
        shown = ", ".join(_value_words(v) for v in values)
        return f"{title} {words} {shown}".rstrip()
    if isinstance(node, Contradiction):
        return f"no row ({_contradiction_words(node.reason, titles)})"
    joined = f" {node.kind} ".join(filter_words(item, titles, nested=True) for item in node.items)
    return f"({joined})" if nested and len(node.items) > 1 else joined


def _contradiction_words(reason: str, titles: dict[str, str]) -> str:
    member, _, why = reason.partition(": ")
    if why == "security context value missing":
        return f"the viewer has no value for {titles.get(member, member)}"
    if why == "no values":
        return f"no value to match {titles.get(member, member)}"
    return reason


def access_row(grant: EntityGrant) -> AccessRow:
    titles = {m.name: m.reading_title for m in (*grant.members, *grant.filter_members)}
    return AccessRow(
        name=grant.name,
        title=grant.title,
        type=grant.type,
        granted=grant.granted,
        reason=grant.reason,
        members=[(words, _titles(grant.members, kind)) for kind, words in KIND_WORDS if _titles(grant.members, kind)],
        all_rows=grant.all_rows,
        row_filters=[filter_words(node, titles) for node in grant.row_filters],
    )


def _titles(members: tuple[MemberGrant, ...], kind: str) -> list[str]:
    return [m.reading_title for m in members if m.kind == kind]


def api_path(deployment: Deployment, data: dict[str, Any], attributes: dict[str, Any]) -> str:
    """The Platform API read of the same viewer (its JSON parameters left readable)."""
    params: dict[str, str] = {}
    if data["external_user"] is not None:
        params["externalId"] = data["external_user"].external_id
    if data["embed_tenant"] is not None:
        params["embedTenant"] = data["embed_tenant"].name
    if data["groups"]:
        params["groups"] = ",".join(data["groups"])
    if attributes:
        params["attributes"] = json.dumps(attributes, separators=(",", ":"))
    if data["security_context"]:
        params["securityContext"] = json.dumps(data["security_context"], separators=(",", ":"))
    query = urlencode(params, safe=',{}[]":@', quote_via=quote)
    return f"/api/v1/deployments/{deployment.pk}/access" + (f"?{query}" if query else "")


def access_page_url(deployment_id: int, **params: str) -> str:
    """The page for one viewer (what the preview links to)."""
    query = urlencode({"deployment": str(deployment_id), **{k: v for k, v in params.items() if v}})
    return f"{reverse('admin:accounts_deployment_access')}?{query}"


def access_urls(model_admin: PanelAdmin) -> list[URLPattern]:
    """The page's URL, for the deployment admin (``admin:accounts_deployment_access``)."""

    def view(request: HttpRequest) -> HttpResponse:
        return access_view(model_admin, request)

    return [path("access/", model_admin.admin_site.admin_view(view), name="accounts_deployment_access")]


def access_view(model_admin: PanelAdmin, request: HttpRequest) -> HttpResponse:
    """The form (GET) and, for a valid viewer, the grid; never cached (it shows the account's directory)."""
    if not model_admin.panel_allowed(request, "view"):
        raise PermissionDenied
    deployments = tenancy.restrict(Deployment.objects.all(), request)
    form = AccessViewerForm(
        request.GET or None,
        initial={"deployment": deployments.order_by("pk").first()},
        deployments=deployments,
        external_users=tenancy.restrict(ExternalUser.objects.all(), request),
        embed_tenants=tenancy.restrict(EmbedTenant.objects.all(), request),
    )
    grid: AccessGrid | None = None
    if form.is_valid():
        try:
            grid = _grid(form.cleaned_data)
        except ApiError as exc:
            form.add_error(None, exc.message)
    context = {**page_context(model_admin, request, title="Who can read what", obj=None), "form": form, "grid": grid}
    response = TemplateResponse(request, "panel/access.html", context)
    add_never_cache_headers(response)
    return response


def _grid(data: dict[str, Any]) -> AccessGrid:
    deployment: Deployment = data["deployment"]
    external_user: ExternalUser | None = data["external_user"]
    embed_tenant = data["embed_tenant"] or (external_user.embed_tenant if external_user is not None else None)
    attributes = typed_attributes(deployment.account, data["attributes"]) if external_user is None else []
    try:
        viewer = embed_viewer_resolve(
            account=deployment.account,
            deployment=deployment,
            external_user=external_user,
            embed_tenant=embed_tenant,
            group_names=data["groups"],
            attribute_values=attributes,
            security_context=data["security_context"],
        )
    except BadRequest as exc:  # the panel names the field as its form does
        raise ApiError(str(exc).replace("securityContext: ", "Security context: ")) from None
    grants = embed_viewer_grants(deployment=deployment, viewer=viewer)
    return AccessGrid(
        deployment=deployment,
        viewer=viewer,
        rows=[access_row(g) for g in grants],
        api_path=api_path(deployment, data, {name: value for name, value in attributes if value is not None}),
    )


def typed_attributes(account: Account, pairs: list[tuple[str, str]]) -> list[tuple[str, Any]]:
    """``name=value`` lines as typed attribute values of the account's tenant-wide definitions; every other
    definition is cleared, so the typed viewer has exactly what was typed (its default, if it has one)."""
    definitions = {d.name: d for d in directory_selectors.attribute_definitions_of(account=account, embed_tenant=None)}
    values: list[tuple[str, Any]] = []
    for name, raw in pairs:
        definition = definitions.get(name)
        if definition is None:
            raise BadRequest(f"Attributes: the account has no tenant-wide attribute {name!r}")
        try:
            values.append((name, default_value_parse(definition.type, raw)))
        except ApiError:
            raise BadRequest(f"Attributes: {raw!r} is not a {definition.type} (attribute {name!r})") from None
    typed = {name for name, _ in pairs}
    return values + [(name, None) for name in sorted(definitions) if name not in typed]
