from django.urls import path, re_path

from embedadmin.platform import access, attributes, audit_log, content, embed_tenants, openapi, views
from embedadmin.platform import deployments as deployment_views
from embedadmin.platform.scim import views as scim

_DEPLOYMENT = "deployments/<id:deployment_id>"
_WORKBOOK = f"{_DEPLOYMENT}/workbooks/<id:workbook_id>"


def _unpublished(resource: str):
    return deployment_views.NotImplementedView.as_view(resource=resource)


_TENANT = "embed-tenants/<str:tenant_name>"

api_v1 = [
    path("spec", openapi.SpecView.as_view()),
    path("tenant/settings", views.TenantSettingsView.as_view()),
    path("app-config", views.AppConfigView.as_view()),
    # The audit log and daily usage (embedadmin/platform/audit_log.py)
    path("audit-log", audit_log.AuditLogView.as_view()),
    path("usage", audit_log.UsageView.as_view()),
    # User attributes, their values, embed tenants (embedadmin/platform/attributes.py, embed_tenants.py)
    path("user-attributes", attributes.UserAttributeListView.as_view()),
    path("user-attributes/<id:attribute_id>", attributes.UserAttributeDetailView.as_view()),
    path("user-attribute-values", attributes.UserAttributeValueView.as_view()),
    path("user-attribute-values/", attributes.UserAttributeValueView.as_view()),
    path("user-attribute-values/<str:user_id>", attributes.UserAttributeValueListView.as_view()),
    path("embed-tenants", embed_tenants.EmbedTenantListView.as_view()),
    path(f"{_TENANT}", embed_tenants.EmbedTenantDetailView.as_view()),
    path(f"{_TENANT}/groups", embed_tenants.EmbedTenantGroupListView.as_view()),
    path(f"{_TENANT}/groups/<id:group_id>", embed_tenants.EmbedTenantGroupDetailView.as_view()),
    path(f"{_TENANT}/groups/<id:group_id>/users", embed_tenants.EmbedTenantGroupUsersView.as_view()),
    path(f"{_TENANT}/user", embed_tenants.EmbedTenantUserProvisionView.as_view()),
    path(f"{_TENANT}/users", embed_tenants.EmbedTenantUsersView.as_view()),
    path(f"{_TENANT}/user-attributes", embed_tenants.EmbedTenantAttributeListView.as_view()),
    path(f"{_TENANT}/user-attributes/<id:attribute_id>", embed_tenants.EmbedTenantAttributeDetailView.as_view()),
    path("users", views.UserListView.as_view()),
    path("users/<str:user_id>", views.UserDetailView.as_view()),
    path("users/<str:user_id>/deactivate", views.UserDeactivateView.as_view()),
    path("deployments", views.DeploymentListView.as_view()),
    path("deployments/", views.DeploymentListView.as_view()),
    # Deployments, environments, env variables, regions, keys and tokens (embedadmin/platform/deployments.py)
    path(f"{_DEPLOYMENT}", deployment_views.DeploymentDetailView.as_view()),
    path(f"{_DEPLOYMENT}/token", deployment_views.DeploymentTokenView.as_view()),
    path(f"{_DEPLOYMENT}/environments", deployment_views.EnvironmentListView.as_view()),
    path(f"{_DEPLOYMENT}/environments/<str:environment_id>/tokens", deployment_views.EnvironmentTokensView.as_view()),
    path(
        f"{_DEPLOYMENT}/environments/<str:environment_id>/tokens-for-meta-sync",
        deployment_views.EnvironmentMetaSyncTokensView.as_view(),
    ),
    path(f"{_DEPLOYMENT}/env-vars", deployment_views.EnvVariablesView.as_view()),
    # Who can read what: a viewer's access to the deployment's cubes and views (embedadmin/platform/access.py)
    path(f"{_DEPLOYMENT}/access", access.DeploymentAccessView.as_view()),
    path("regions", deployment_views.RegionListView.as_view()),
    path("api-keys", deployment_views.ApiKeyListView.as_view()),
    path("api-keys/<id:key_id>", deployment_views.ApiKeyDetailView.as_view()),
    path("platform-tokens", deployment_views.PlatformTokenListView.as_view()),
    path("platform-tokens/<id:token_id>", deployment_views.PlatformTokenDetailView.as_view()),
    # Resources whose semantics Cube does not publish: 501 for any method and subpath
    re_path(r"^oauth-integrations(/.*)?$", _unpublished("OAuth integrations")),
    re_path(r"^user-oauth-tokens(/.*)?$", _unpublished("User OAuth tokens")),
    re_path(r"^oidc-token-configs(/.*)?$", _unpublished("OIDC token configs")),
    re_path(r"^github(/.*)?$", _unpublished("Repository hosting (GitHub)")),
    re_path(r"^deployments/(?P<deployment_id>[0-9]+)/dbt-sync(/.*)?$", _unpublished("dbt sync")),
    # Workspace content (embedadmin/platform/content.py)
    path(f"{_DEPLOYMENT}/workbooks", content.WorkbookListView.as_view()),
    path(f"{_DEPLOYMENT}/workbooks/by-slug/<str:slug>", content.WorkbookBySlugView.as_view()),
    path(_WORKBOOK, content.WorkbookDetailView.as_view()),
    path(f"{_WORKBOOK}/dashboard", content.WorkbookDashboardView.as_view()),
    path(f"{_WORKBOOK}/publish", content.WorkbookPublishView.as_view()),
    path(f"{_WORKBOOK}/embed-access", content.WorkbookEmbedAccessView.as_view()),
    path(f"{_DEPLOYMENT}/reports", content.ReportListView.as_view()),
    path(f"{_DEPLOYMENT}/reports/by-public-id/<str:public_id>", content.ReportByPublicIdView.as_view()),
    path(f"{_DEPLOYMENT}/reports/<id:report_id>", content.ReportDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders", content.FolderListView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<id:folder_id>", content.FolderDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<id:folder_id>/ancestors", content.FolderAncestorsView.as_view()),
    path("embed/dashboard/<str:public_id>", content.EmbedDashboardView.as_view()),
]

# Build API v1 (/build/api/v1/): deployment creation and data model files (embedadmin/platform/deployments.py)
build_v1 = [
    path("deployments", deployment_views.DeploymentCreateView.as_view()),
    path(f"{_DEPLOYMENT}/files", deployment_views.ModelFileListView.as_view()),
    re_path(
        r"^deployments/(?P<deployment_id>[0-9]+)/files/(?P<file_path>.+)$", deployment_views.ModelFileView.as_view()
    ),
    path(f"{_DEPLOYMENT}/data-model", deployment_views.DataModelUploadView.as_view()),
    re_path(
        r"^deployments/(?P<deployment_id>[0-9]+)/github/connect(/.*)?$", _unpublished("Repository hosting (GitHub)")
    ),
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
