from django.urls import path, re_path

from embedadmin.platform import content, openapi, views
from embedadmin.platform.scim import views as scim

_DEPLOYMENT = "deployments/<int:deployment_id>"
_WORKBOOK = f"{_DEPLOYMENT}/workbooks/<int:workbook_id>"

api_v1 = [
    path("spec", openapi.SpecView.as_view()),
    path("tenant/settings", views.TenantSettingsView.as_view()),
    path("app-config", views.AppConfigView.as_view()),
    path("user-attributes", views.UserAttributeListView.as_view()),
    path("user-attributes/<int:attribute_id>", views.UserAttributeDetailView.as_view()),
    path("users", views.UserListView.as_view()),
    path("users/<str:user_id>", views.UserDetailView.as_view()),
    path("users/<str:user_id>/deactivate", views.UserDeactivateView.as_view()),
    path("deployments", views.DeploymentListView.as_view()),
    path("deployments/", views.DeploymentListView.as_view()),
    # Workspace content (embedadmin/platform/content.py)
    path(f"{_DEPLOYMENT}/workbooks", content.WorkbookListView.as_view()),
    path(f"{_DEPLOYMENT}/workbooks/by-slug/<str:slug>", content.WorkbookBySlugView.as_view()),
    path(_WORKBOOK, content.WorkbookDetailView.as_view()),
    path(f"{_WORKBOOK}/dashboard", content.WorkbookDashboardView.as_view()),
    path(f"{_WORKBOOK}/publish", content.WorkbookPublishView.as_view()),
    path(f"{_WORKBOOK}/embed-access", content.WorkbookEmbedAccessView.as_view()),
    path(f"{_DEPLOYMENT}/reports", content.ReportListView.as_view()),
    path(f"{_DEPLOYMENT}/reports/by-public-id/<str:public_id>", content.ReportByPublicIdView.as_view()),
    path(f"{_DEPLOYMENT}/reports/<int:report_id>", content.ReportDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders", content.FolderListView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<int:folder_id>", content.FolderDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<int:folder_id>/ancestors", content.FolderAncestorsView.as_view()),
    path("embed/dashboard/<str:public_id>", content.EmbedDashboardView.as_view()),
]

scim_v2 = [
    path("ServiceProviderConfig", scim.ServiceProviderConfigView.as_view()),
    path("ResourceTypes", scim.ResourceTypeListView.as_view()),
    path("ResourceTypes/<str:type_id>", scim.ResourceTypeDetailView.as_view()),
    path("Schemas", scim.SchemaListView.as_view()),
    path("Schemas/<str:schema_id>", scim.SchemaDetailView.as_view()),
    path(".search", scim.RootSearchView.as_view()),
    path("Users", scim.ScimUserListView.as_view()),
    path("Users/.search", scim.ScimUserSearchView.as_view()),
    path("Users/<str:user_id>", scim.ScimUserDetailView.as_view()),
    path("Groups", scim.ScimGroupListView.as_view()),
    path("Groups/.search", scim.ScimGroupSearchView.as_view()),
    path("Groups/<str:group_id>", scim.ScimGroupDetailView.as_view()),
    re_path(r"^(?P<rest>.*)$", scim.NotFoundView.as_view()),
]
