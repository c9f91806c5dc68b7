"""URL map: versioned APIs under /api, the admin panel under /admin, probes at the root."""

from django.conf import settings
from django.urls import include, path
from django.views.generic import RedirectView

from embedadmin.accounts.views import ApiKeyCurrentView
from embedadmin.chat.models import Agent
from embedadmin.core import health
from embedadmin.embedding import pages
from embedadmin.panel.site import panel_site
from embedadmin.platform.openapi import docs_page
from embedadmin.platform.urls import api_v1 as platform_v1
from embedadmin.platform.urls import build_v1 as platform_build_v1
from embedadmin.platform.urls import scim_v2

# The Core Data API: {base_path}/v1/... for the default deployment, d/{id}{base_path}/v1/... for any.
_CORE_API = (settings.CUBEJS_BASE_PATH.strip("/") + "/").lstrip("/")


def _chat_endpoint(deployment_id: int, agent_id: str | None) -> str | None:
    """The Chat API URL an embed page of ``deployment_id`` talks to: the agent it names, else the deployment's
    first agent. Given to the embed pages here, where both rooms meet (embedding does not import chat)."""
    agents = Agent.objects.select_related("account").filter(deployment_id=deployment_id).order_by("id")
    agent = (agents.filter(public_id=agent_id).first() if agent_id else None) or agents.first()
    if agent is None:
        return None
    return f"/api/v1/public/{agent.account.name}/agents/{agent.public_id}/chat/stream-chat-state"


_EMBED = {"chat_endpoint": _chat_endpoint}

urlpatterns = [
    path("livez", health.livez),
    path("readyz", health.readyz),
    path("embed/dashboard/<str:public_id>", pages.dashboard_page, _EMBED),
    path("embed/chat", pages.chat_page, _EMBED),
    path("api/docs", docs_page),
    path("api/v1/api-keys/current", ApiKeyCurrentView.as_view()),
    path("api/v1/", include("embedadmin.embedding.urls")),
    path("api/v1/", include("embedadmin.chat.urls")),
    path("api/v1/", include(platform_v1)),
    path("build/api/v1/", include(platform_build_v1)),
    path("api/scim/v2/", include(scim_v2)),
    path("scim/v2/", include(scim_v2)),
    path("admin/", panel_site.urls),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # Last: the Core Data API answers a JSON 404 for any other path under its prefixes.
    path(_CORE_API, include("embedadmin.semantic.urls")),
    path(f"d/<int:deployment_id>/{_CORE_API}", include("embedadmin.semantic.urls")),
]
