from django.urls import path

from embedadmin.platform import scim, views

api_v1 = [
    path("tenant/settings", views.TenantSettingsView.as_view()),
    path("user-attributes", views.UserAttributeListView.as_view()),
    path("user-attributes/<int:attribute_id>", views.UserAttributeDetailView.as_view()),
    path("users", views.UserListView.as_view()),
    path("deployments", views.DeploymentListView.as_view()),
    path("deployments/", views.DeploymentListView.as_view()),
]

scim_v2 = [
    path("Groups", scim.ScimGroupListView.as_view()),
    path("Groups/<str:group_id>", scim.ScimGroupDetailView.as_view()),
]
