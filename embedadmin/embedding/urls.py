from django.urls import path

from embedadmin.embedding import pages, views

urlpatterns = [
    path("embed/generate-session", views.GenerateSessionView.as_view()),
    path("embed/session/token", views.SessionTokenView.as_view()),
    path("embed/session/revoke", views.SessionRevokeView.as_view()),
    path("embed/session/context", views.SessionContextView.as_view()),
    path("embed/dashboard/<str:public_id>/view", pages.dashboard_view),
    path("embed/dashboard/<str:public_id>/export", pages.dashboard_export),
    path("embed-tenants", views.EmbedTenantListView.as_view()),
    path("embed-tenants/<str:tenant_name>/groups", views.EmbedTenantGroupListView.as_view()),
    path("embed-tenants/<str:tenant_name>/groups/<int:group_id>", views.EmbedTenantGroupDetailView.as_view()),
    path("embed-tenants/<str:tenant_name>/user-attributes", views.EmbedTenantAttributeListView.as_view()),
    path(
        "embed-tenants/<str:tenant_name>/user-attributes/<int:attribute_id>",
        views.EmbedTenantAttributeDetailView.as_view(),
    ),
]
