from django.urls import path, re_path

from embedadmin.platform import (
    access,
    api_keys,
    attributes,
    audit_log,
    data_model,
    deployments,
    embed_dashboards,
    embed_tenants,
    env_variables,
    environments,
    folders,
    openapi,
    platform_tokens,
    pre_aggregations,
    regions,
    reports,
    tenant_settings,
    unpublished,
    users,
    workbooks,
)
from embedadmin.platform.scim import views as scim

_DEPLOYMENT = "deployments/<id:deployment_id>"
_WORKBOOK = f"{_DEPLOYMENT}/workbooks/<id:workbook_id>"


def _unpublished(resource: str):
    return unpublished.NotImplementedView.as_view(resource=resource)


_TENANT = "embed-tenants/<str:tenant_name>"

api_v1 = [
    path("spec", openapi.SpecView.as_view()),
    # Tenant settings and Cube's app config (embedadmin/platform/tenant_settings.py)
    path("tenant/settings", tenant_settings.TenantSettingsView.as_view()),
    path("app-config", tenant_settings.AppConfigView.as_view()),
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
    # Internal users (embedadmin/platform/users.py)
    path("users", users.UserListView.as_view()),
    path("users/<str:user_id>", users.UserDetailView.as_view()),
    path("users/<str:user_id>/deactivate", users.UserDeactivateView.as_view()),
    # Deployments and their token (deployments.py), environments and their tokens (environments.py), env variables
    # (env_variables.py)
    path("deployments", deployments.DeploymentListView.as_view()),
    path("deployments/", deployments.DeploymentListView.as_view()),
    path(f"{_DEPLOYMENT}", deployments.DeploymentDetailView.as_view()),
    path(f"{_DEPLOYMENT}/token", deployments.DeploymentTokenView.as_view()),
    path(f"{_DEPLOYMENT}/environments", environments.EnvironmentListView.as_view()),
    path(f"{_DEPLOYMENT}/environments/<str:environment_id>/tokens", environments.EnvironmentTokensView.as_view()),
    path(
        f"{_DEPLOYMENT}/environments/<str:environment_id>/tokens-for-meta-sync",
        environments.EnvironmentMetaSyncTokensView.as_view(),
    ),
    path(f"{_DEPLOYMENT}/env-vars", env_variables.EnvVariablesView.as_view()),
    # Who can read what: a viewer's access to the deployment's cubes and views (embedadmin/platform/access.py)
    path(f"{_DEPLOYMENT}/access", access.DeploymentAccessView.as_view()),
    # Rollup pre-aggregations: build progress and a rebuild (embedadmin/platform/pre_aggregations.py)
    path(f"{_DEPLOYMENT}/pre-aggregations", pre_aggregations.PreAggregationListView.as_view()),
    path(f"{_DEPLOYMENT}/pre-aggregations/rebuild", pre_aggregations.PreAggregationRebuildView.as_view()),
    # Regions (regions.py), API keys (api_keys.py) and platform tokens (platform_tokens.py)
    path("regions", regions.RegionListView.as_view()),
    path("api-keys", api_keys.ApiKeyListView.as_view()),
    path("api-keys/<id:key_id>", api_keys.ApiKeyDetailView.as_view()),
    path("platform-tokens", platform_tokens.PlatformTokenListView.as_view()),
    path("platform-tokens/<id:token_id>", platform_tokens.PlatformTokenDetailView.as_view()),
    # Resources whose semantics Cube does not publish: 501 for any method and subpath (unpublished.py)
    re_path(r"^oauth-integrations(/.*)?$", _unpublished("OAuth integrations")),
    re_path(r"^user-oauth-tokens(/.*)?$", _unpublished("User OAuth tokens")),
    re_path(r"^oidc-token-configs(/.*)?$", _unpublished("OIDC token configs")),
    re_path(r"^github(/.*)?$", _unpublished("Repository hosting (GitHub)")),
    re_path(r"^deployments/(?P<deployment_id>[0-9]+)/dbt-sync(/.*)?$", _unpublished("dbt sync")),
    # Workspace content: workbooks (workbooks.py), reports (reports.py), folders (folders.py), published dashboards
    # (embed_dashboards.py)
    path(f"{_DEPLOYMENT}/workbooks", workbooks.WorkbookListView.as_view()),
    path(f"{_DEPLOYMENT}/workbooks/by-slug/<str:slug>", workbooks.WorkbookBySlugView.as_view()),
    path(_WORKBOOK, workbooks.WorkbookDetailView.as_view()),
    path(f"{_WORKBOOK}/dashboard", workbooks.WorkbookDashboardView.as_view()),
    path(f"{_WORKBOOK}/publish", workbooks.WorkbookPublishView.as_view()),
    path(f"{_WORKBOOK}/embed-access", workbooks.WorkbookEmbedAccessView.as_view()),
    path(f"{_DEPLOYMENT}/reports", reports.ReportListView.as_view()),
    path(f"{_DEPLOYMENT}/reports/by-public-id/<str:public_id>", reports.ReportByPublicIdView.as_view()),
    path(f"{_DEPLOYMENT}/reports/<id:report_id>", reports.ReportDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders", folders.FolderListView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<id:folder_id>", folders.FolderDetailView.as_view()),
    path(f"{_DEPLOYMENT}/folders/<id:folder_id>/ancestors", folders.FolderAncestorsView.as_view()),
    path("embed/dashboard/<str:public_id>", embed_dashboards.EmbedDashboardView.as_view()),
]

# Build API v1 (/build/api/v1/): deployment creation (embedadmin/platform/deployments.py) and data model files
# (embedadmin/platform/data_model.py)
build_v1 = [
    path("deployments", deployments.DeploymentCreateView.as_view()),
    path(f"{_DEPLOYMENT}/files", data_model.ModelFileListView.as_view()),
    re_path(r"^deployments/(?P<deployment_id>[0-9]+)/files/(?P<file_path>.+)$", data_model.ModelFileView.as_view()),
    path(f"{_DEPLOYMENT}/data-model", data_model.DataModelUploadView.as_view()),
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
