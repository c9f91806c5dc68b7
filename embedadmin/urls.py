"""URL map: versioned APIs under /api, the admin panel under /admin, probes at the root."""

from django.urls import include, path
from django.views.generic import RedirectView

from embedadmin.accounts.views import ApiKeyCurrentView
from embedadmin.core import health
from embedadmin.panel.site import panel_site
from embedadmin.platform.urls import api_v1 as platform_v1
from embedadmin.platform.urls import scim_v2

urlpatterns = [
    path("livez", health.livez),
    path("readyz", health.readyz),
    path("api/v1/api-keys/current", ApiKeyCurrentView.as_view()),
    path("api/v1/", include("embedadmin.embedding.urls")),
    path("api/v1/", include(platform_v1)),
    path("api/scim/v2/", include(scim_v2)),
    path("admin/", panel_site.urls),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
