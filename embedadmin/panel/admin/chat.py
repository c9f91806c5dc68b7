"""Panel pages of the Chat API: agents (with their Chat API URL) and chat users. Their daily user counts are on
the audit room's daily usage page (``panel/admin/audit.py``)."""

from __future__ import annotations

from django.contrib import admin
from django.forms import BaseForm
from django.http import HttpRequest
from django.utils.html import format_html

from embedadmin.chat import services as chat
from embedadmin.chat.models import Agent, ChatUser
from embedadmin.chat.selectors import chat_api_url
from embedadmin.panel.forms import AgentAddForm
from embedadmin.panel.panel_admin import Created, PanelAdmin
from embedadmin.panel.site import panel_site


def _chat_api_url_column(request: HttpRequest):
    """A column showing an agent's Chat API URL on this panel's host (built per request: admin
    instances are shared between threads, so the request cannot be kept on them)."""
    site_url = request.build_absolute_uri("/")

    @admin.display(description="Chat API URL")
    def chat_api_url_column(obj: Agent) -> str:
        return format_html("<code>{}</code>", chat_api_url(obj, site_url))

    return chat_api_url_column


@admin.register(Agent, site=panel_site)
class AgentAdmin(PanelAdmin):
    panel_allows = frozenset({"view", "add"})
    form = AgentAddForm
    list_display_links = ("name",)
    list_filter = ("provider", "deployment", "account")
    list_select_related = ("account", "deployment")
    search_fields = ("name", "public_id")

    def get_list_display(self, request: HttpRequest):
        return ("name", "public_id", "deployment", "provider", _chat_api_url_column(request), "account", "created_at")

    def get_fields(self, request: HttpRequest, obj: Agent | None = None):
        if obj is None:
            return ("account", "deployment", "name", "provider", "base_url", "model", "api_key")
        return self.get_readonly_fields(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None):
        if obj is None:
            return ()
        url = _chat_api_url_column(request)
        return ("public_id", url, "account", "deployment", "name", "provider", "base_url", "model")

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        agent = chat.agent_create(
            account=data["account"],
            deployment=data["deployment"],
            name=data["name"],
            provider=data["provider"],
            base_url=data.get("base_url") or "",
            model=data.get("model") or "",
            api_key=data.get("api_key") or "",
        )
        return Created(agent)


@admin.register(ChatUser, site=panel_site)
class ChatUserAdmin(PanelAdmin):
    list_display = ("identity", "email", "is_ephemeral", "expires_at", "account", "created_at")
    list_filter = ("is_ephemeral", "account")
    list_select_related = ("account", "internal_user")
    search_fields = ("external_id", "email", "internal_user__username")
    readonly_fields = ("account", "external_id", "internal_user", "email", "is_ephemeral", "expires_at", "groups")
    fields = readonly_fields

    @admin.display(description="user")
    def identity(self, obj: ChatUser) -> str:
        return obj.external_id or str(obj.internal_user)
