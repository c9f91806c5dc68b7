"""Panel pages of the directory: embed tenants, external users (and minting a session for one), groups,
attribute definitions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import Count, Model, QuerySet
from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import ApiError
from embedadmin.directory import services as directory
from embedadmin.directory.models import (
    AttributeDefinition,
    AttributeValue,
    EmbedTenant,
    ExternalUser,
    Group,
    GroupMembership,
)
from embedadmin.embedding import services as embedding
from embedadmin.panel import tenancy
from embedadmin.panel.forms import MintSessionForm
from embedadmin.panel.panel_admin import (
    Created,
    PanelAdmin,
    PanelReadOnlyInline,
    ScopeFilter,
    ShownOnce,
    page_context,
    render_shown_once,
)
from embedadmin.panel.site import panel_site

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class TenantCounts(TypedDict):
    """What EmbedTenantAdmin's queryset annotates its tenants with."""

    user_count: int
    group_count: int


class MemberCount(TypedDict):
    """What GroupAdmin's queryset annotates its groups with."""

    member_count: int


def duration_text(seconds: int) -> str:
    """``300`` -> ``"5 minutes"``, ``90`` -> ``"90 seconds"``."""
    if seconds % 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = seconds // 60
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


@admin.register(EmbedTenant, site=panel_site)
class EmbedTenantAdmin(PanelAdmin):
    """Embed tenants appear when a session names one; the panel lists them."""

    list_display = ("name", "account", "user_count", "group_count", "created_at")
    search_fields = ("name",)
    list_filter = ("account", "created_at")
    list_select_related = ("account",)
    fields = ("name", "account", "user_count", "group_count", "created_at", "updated_at")
    readonly_fields = ("user_count", "group_count")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .annotate(user_count=Count("users", distinct=True), group_count=Count("groups", distinct=True))
        )

    @admin.display(description="external users", ordering="user_count")
    def user_count(self, obj: WithAnnotations[EmbedTenant, TenantCounts]) -> int:
        return obj.user_count

    @admin.display(description="own groups", ordering="group_count")
    def group_count(self, obj: WithAnnotations[EmbedTenant, TenantCounts]) -> int:
        return obj.group_count


class GroupMembershipInline(PanelReadOnlyInline):
    model = GroupMembership
    fields = ("group",)
    verbose_name = "group membership"


class AttributeValueInline(PanelReadOnlyInline):
    model = AttributeValue
    fields = ("definition", "value", "updated_at")
    verbose_name = "attribute value"


@admin.register(ExternalUser, site=panel_site)
class ExternalUserAdmin(PanelAdmin):
    """Viewers, as generate-session left them: read-only here, deletable (which frees a place under the
    cap), and the place to mint a session for one."""

    panel_allows = frozenset({"view", "delete", "mint"})
    list_display = ("external_id", "display_name", "embed_tenant", "last_session_at", "account")
    search_fields = ("external_id", "email", "display_name")
    list_filter = ("account", "embed_tenant", "last_session_at")
    list_select_related = ("account", "embed_tenant")
    fields = (
        "external_id",
        "account",
        "embed_tenant",
        "email",
        "display_name",
        "picture",
        "last_session_at",
        "created_at",
        "updated_at",
    )
    inlines = (GroupMembershipInline, AttributeValueInline)
    actions = ("mint_embed_session",)

    def delete_through_service(self, obj: ExternalUser) -> None:
        directory.external_user_delete(user=obj)

    @admin.action(description="Mint embed session", permissions=["mint"])
    def mint_embed_session(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """Ask for the deployment (an intermediate page), then mint through the generate-session service
        and show the ``sessionId`` once. The action's own form posts back here with ``mint`` set."""
        users = list(queryset.select_related("account__tenant_settings", "embed_tenant")[:2])
        if len(users) != 1:
            self.message_user(
                request, "Select exactly one external user to mint an embed session for.", messages.WARNING
            )
            return None
        user = users[0]
        deployments = tenancy.restrict(Deployment.objects.filter(account=user.account), request)
        form = MintSessionForm(request.POST if "mint" in request.POST else None, deployments=deployments)
        ttl = duration_text(settings.EMBEDADMIN["SESSION_TTL_SECONDS"])
        if not form.is_valid():
            return TemplateResponse(
                request,
                "panel/mint_session.html",
                {
                    **page_context(self, request, title="Mint embed session", obj=user),
                    "form": form,
                    "ttl": ttl,
                    "action_checkbox_name": ACTION_CHECKBOX_NAME,
                },
            )
        deployment = form.cleaned_data["deployment"]
        data = embedding.GenerateSessionInput(
            deployment_id=deployment.pk,
            external_id=user.external_id,
            # Keep the viewer in the embed tenant they were last seen in.
            embed_tenant_name=user.embed_tenant.name if user.embed_tenant else None,
        )
        try:
            session_id = embedding.session_generate(account=user.account, deployment=deployment, data=data)
        except ApiError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        shown = ShownOnce(
            title=f"Embed session minted for {user.external_id}",
            secrets=(("sessionId", session_id),),
            notes=(
                f"Single use and valid for {ttl}: exchange it once with POST /api/v1/embed/session/token.",
                f"Deployment #{deployment.pk} ({deployment.name}), read-only mode"
                + (f", embed tenant {user.embed_tenant.name}." if user.embed_tenant else "."),
                "It is not stored in clear and is not shown again.",
            ),
        )
        return render_shown_once(self, request, shown, obj=user)


class CatalogAdmin(PanelAdmin):
    """Groups and attribute definitions: the tenant-wide catalog or an embed tenant's own."""

    list_select_related = ("account", "embed_tenant")
    help_texts = {"embed_tenant": "Leave empty for the tenant-wide catalog (read-only sessions and SCIM use it)."}

    def get_form(self, request: HttpRequest, obj: Model | None = None, change: bool = False, **kwargs: Any):
        return super().get_form(request, obj, change=change, help_texts=self.help_texts, **kwargs)

    @admin.display(description="scope", ordering="embed_tenant__name")
    def scope(self, obj: Group | AttributeDefinition) -> str:
        return obj.embed_tenant.name if obj.embed_tenant is not None else "tenant-wide"


@admin.register(Group, site=panel_site)
class GroupAdmin(CatalogAdmin):
    panel_allows = frozenset({"view", "add", "delete"})
    list_display = ("name", "scope", "account", "member_count", "created_at")
    search_fields = ("name", "description")
    list_filter = (ScopeFilter, "embed_tenant", "account", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(member_count=Count("memberships", distinct=True))

    def get_fields(self, request: HttpRequest, obj: Group | None = None) -> tuple[str, ...]:
        fields = ("account", "embed_tenant", "name", "description")
        return fields if obj is None else (*fields, "member_count", "created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Group | None = None) -> tuple[str, ...]:
        return () if obj is None else ("member_count",)

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        group = directory.group_create(
            account=data["account"],
            embed_tenant=data["embed_tenant"],
            name=data["name"],
            description=data["description"],
        )
        return Created(group)

    def delete_through_service(self, obj: Group) -> None:
        directory.group_delete(group=obj)

    @admin.display(description="external members", ordering="member_count")
    def member_count(self, obj: WithAnnotations[Group, MemberCount]) -> int:
        return obj.member_count


@admin.register(AttributeDefinition, site=panel_site)
class AttributeDefinitionAdmin(CatalogAdmin):
    panel_allows = frozenset({"view", "add", "change", "delete"})
    list_display = ("name", "type", "scope", "display_name", "default_value", "account", "created_at")
    search_fields = ("name", "display_name", "description")
    list_filter = ("type", ScopeFilter, "embed_tenant", "account")
    fields = ("account", "embed_tenant", "name", "type", "display_name", "default_value", "description")

    def get_readonly_fields(self, request: HttpRequest, obj: AttributeDefinition | None = None) -> tuple[str, ...]:
        # The type never changes; policies refer to the name; the scope is where it was defined.
        return () if obj is None else ("account", "embed_tenant", "name", "type")

    help_texts = {
        **CatalogAdmin.help_texts,
        "default_value": 'Text for a string; JSON for the others (5, ["a", "b"], [1, 2]); empty for none.',
    }

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        definition = directory.attribute_definition_create(
            account=data["account"],
            embed_tenant=data["embed_tenant"],
            data=directory.AttributeDefinitionInput(
                name=data["name"],
                type=data["type"],
                display_name=data["display_name"],
                default_value=data["default_value"],
                description=data["description"],
            ),
        )
        return Created(definition)

    def update_through_service(self, request: HttpRequest, obj: AttributeDefinition, form: BaseForm) -> None:
        directory.attribute_definition_update(
            definition=obj, changes={name: form.cleaned_data[name] for name in form.changed_data}
        )

    def delete_through_service(self, obj: AttributeDefinition) -> None:
        directory.attribute_definition_delete(definition=obj)
