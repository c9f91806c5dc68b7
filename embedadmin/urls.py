"""URL map: versioned APIs under /api, the admin panel under /admin, probes at the root."""

from django.conf import settings
from django.urls import include, path
from django.views.generic import RedirectView

from embedadmin.accounts.views import ApiKeyCurrentView
from embedadmin.core import health
from embedadmin.panel.site import panel_site
from embedadmin.platform.urls import api_v1 as platform_v1
from embedadmin.platform.urls import scim_v2

# The Core Data API: {base_path}/v1/... for the default deployment, d/{id}{base_path}/v1/... for any.
_CORE_API = (settings.CUBEJS_BASE_PATH.strip("/") + "/").lstrip("/")

urlpatterns = [
    path("livez", health.livez),
    path("readyz", health.readyz),
    path("api/v1/api-keys/current", ApiKeyCurrentView.as_view()),
    path("api/v1/", include("embedadmin.embedding.urls")),
    path("api/v1/", include("embedadmin.chat.urls")),
    path("api/v1/", include(platform_v1)),
    path("api/scim/v2/", include(scim_v2)),
    path("admin/", panel_site.urls),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # Last: the Core Data API answers a JSON 404 for any other path under its prefixes.
    path(_CORE_API, include("embedadmin.semantic.urls")),
    path(f"d/<int:deployment_id>/{_CORE_API}", include("embedadmin.semantic.urls")),
]
