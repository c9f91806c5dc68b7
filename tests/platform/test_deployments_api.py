"""Deployments, their token, env variables, regions, keys, tokens and the 501s of the Platform API."""

from __future__ import annotations

import json

import jwt

from embedadmin.accounts.models import ApiKey, Deployment, DeploymentEnvVariable, IssuedToken
from embedadmin.accounts.selectors import deployment_signing_secret
from tests.platform.support import db_rows


def test_create_get_patch_delete_a_deployment(api, acme):
    # when
    created = api.post_json("/build/api/v1/deployments", {"name": "Sales EU"}, **acme.platform_headers)

    # then
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["name"], body["slug"]) == ("Sales EU", "sales-eu")
    deployment = Deployment.objects.get(pk=body["id"], account=acme.account)
    assert deployment.secrets.filter(revoked_at__isnull=True).count() == 1
    url = f"/api/v1/deployments/{deployment.pk}"
    assert api.get(url, **acme.platform_headers).json()["slug"] == "sales-eu"
    patched = api.patch_json(url, {"name": "Sales"}, **acme.platform_headers)
    assert patched.status_code == 200
    assert patched.json()["name"] == "Sales"
    assert api.delete(url, **acme.platform_headers).status_code == 204
    assert not Deployment.objects.filter(pk=deployment.pk).exists()


def test_another_accounts_deployment_is_404_on_every_route_and_nothing_changes(api, acme, globex):
    # given
    target = acme.deployment.pk
    before = db_rows()
    calls = [
        ("get", f"/api/v1/deployments/{target}", None),
        ("patch", f"/api/v1/deployments/{target}", {"name": "x"}),
        ("delete", f"/api/v1/deployments/{target}", None),
        ("post", f"/api/v1/deployments/{target}/token", {}),
        ("get", f"/api/v1/deployments/{target}/environments", None),
        ("get", f"/api/v1/deployments/{target}/environments/production/tokens", None),
        ("post", f"/api/v1/deployments/{target}/environments/production/tokens", {"security_context": {}}),
        ("get", f"/api/v1/deployments/{target}/env-vars", None),
        ("get", f"/build/api/v1/deployments/{target}/files", None),
        ("get", f"/api/v1/deployments/{target}/dbt-sync", None),
    ]

    # when / then
    for method, url, body in calls:
        if body is None:
            response = getattr(api, method)(url, **globex.platform_headers)
        else:
            send = api.post_json if method == "post" else api.patch_json
            response = send(url, body, **globex.platform_headers)
        assert response.status_code == 404, (method, url, response.content)
        assert response.json() == {"error": f"Deployment {target} not found"}
    assert db_rows() == before


def test_the_deployment_token_verifies_with_the_deployments_secret(api, acme):
    # when
    response = api.post_json(
        f"/api/v1/deployments/{acme.deployment.pk}/token", {"expiresIn": 120}, **acme.platform_headers
    )

    # then
    assert response.status_code == 200
    token = response.json()["cubeApiToken"]
    claims = jwt.decode(token, deployment_signing_secret(deployment=acme.deployment), algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 120
    assert claims["groups"] == []
    assert claims["sub"].startswith("platform:")
    assert IssuedToken.objects.filter(jti=claims["jti"], kind="deployment").exists()


def test_a_bad_expires_in_is_400(api, acme):
    for value in (59, 86401, "60", True):
        response = api.post_json(
            f"/api/v1/deployments/{acme.deployment.pk}/token", {"expiresIn": value}, **acme.platform_headers
        )
        assert response.status_code == 400
        assert response.json() == {"error": "expiresIn: must be an integer between 60 and 86400"}


def test_env_vars_are_encrypted_masked_and_upserted(api, acme):
    # given
    url = f"/api/v1/deployments/{acme.deployment.pk}/env-vars"
    body = {"env_variables": [{"name": "DB_PASSWORD", "value": "s3cret"}, {"name": "REGION", "value": "eu"}]}

    # when
    response = api.generic("PUT", url, data=json.dumps(body), content_type="application/json", **acme.platform_headers)

    # then
    assert response.status_code == 200, response.content
    assert response.json()["items"] == [
        {"name": "DB_PASSWORD", "value": "[ENCRYPTED]"},
        {"name": "REGION", "value": "eu"},
    ]
    stored = DeploymentEnvVariable.objects.get(name="DB_PASSWORD")
    assert "s3cret" not in stored.encrypted_value


def test_sending_the_placeholder_or_a_bad_name_is_400_and_changes_nothing(api, acme):
    url = f"/api/v1/deployments/{acme.deployment.pk}/env-vars"
    before = db_rows()
    for entry in ({"name": "X_TOKEN", "value": "[ENCRYPTED]"}, {"name": "1BAD", "value": "v"}):
        body = json.dumps({"env_variables": [entry]})
        response = api.generic("PUT", url, data=body, content_type="application/json", **acme.platform_headers)
        assert response.status_code == 400
    assert db_rows() == before


def test_regions_list_this_install(api, acme):
    response = api.get("/api/v1/regions", **acme.platform_headers)
    assert response.status_code == 200
    body = response.json()
    assert [r["name"] for r in body["items"]] == ["local"]
    assert body["data"] == body["items"]


def test_api_keys_create_scope_list_and_revoke(api, acme):
    # when
    created = api.post_json(
        "/api/v1/api-keys", {"name": "ci", "deploymentIds": [acme.deployment.pk]}, **acme.platform_headers
    )

    # then
    assert created.status_code == 201, created.content
    key = created.json()
    assert key["key"].startswith("eak_")
    assert key["deploymentIds"] == [acme.deployment.pk]
    listed = api.get("/api/v1/api-keys", **acme.platform_headers).json()["items"]
    assert key["id"] in [item["id"] for item in listed]
    assert all("key" not in item for item in listed)
    assert api.get("/api/v1/api-keys/current", HTTP_AUTHORIZATION=f"Api-Key {key['key']}").status_code == 200
    assert api.delete(f"/api/v1/api-keys/{key['id']}", **acme.platform_headers).status_code == 204
    assert ApiKey.objects.get(pk=key["id"]).revoked_at is not None
    assert api.get("/api/v1/api-keys/current", HTTP_AUTHORIZATION=f"Api-Key {key['key']}").status_code == 401


def test_another_accounts_key_is_404(api, acme, globex):
    key_id = ApiKey.objects.filter(account=acme.account).first().pk
    response = api.delete(f"/api/v1/api-keys/{key_id}", **globex.platform_headers)
    assert response.status_code == 404
    assert ApiKey.objects.get(pk=key_id).revoked_at is None


def test_platform_tokens_create_and_revoke(api, acme):
    created = api.post_json("/api/v1/platform-tokens", {"name": "ops"}, **acme.platform_headers)
    assert created.status_code == 201
    token = created.json()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token['token']}"}
    assert api.get("/api/v1/regions", **headers).status_code == 200
    assert api.delete(f"/api/v1/platform-tokens/{token['id']}", **acme.platform_headers).status_code == 204
    assert api.get("/api/v1/regions", **headers).status_code == 401


def test_unpublished_resources_are_501(api, acme):
    for method, url in (
        ("get", "/api/v1/oauth-integrations"),
        ("post", "/api/v1/user-oauth-tokens/x"),
        ("delete", "/api/v1/oidc-token-configs/1"),
        ("get", "/api/v1/github/repos"),
        ("post", f"/api/v1/deployments/{acme.deployment.pk}/dbt-sync"),
        ("post", f"/build/api/v1/deployments/{acme.deployment.pk}/github/connect"),
    ):
        response = getattr(api, method)(url, **acme.platform_headers)
        assert response.status_code == 501, (url, response.content)
        assert "is not implemented: its semantics are not published" in response.json()["error"]


def test_deleting_a_deployment_removes_its_nested_folders_and_content(api, acme):
    from embedadmin.dashboards import services as content
    from embedadmin.dashboards.models import Folder, Workbook

    created = api.post_json("/build/api/v1/deployments", {"name": "Scratch"}, **acme.platform_headers)
    assert created.status_code in (200, 201), created.content
    deployment = Deployment.objects.get(pk=created.json()["id"])
    parent = content.folder_create(deployment=deployment, name="parent")
    child = content.folder_create(deployment=deployment, name="child", parent=parent)
    content.folder_create(deployment=deployment, name="grandchild", parent=child)
    content.workbook_create(deployment=deployment, changes={"name": "In the child", "folder": child})

    response = api.delete(f"/api/v1/deployments/{deployment.pk}", **acme.platform_headers)

    assert response.status_code == 204
    assert not Deployment.objects.filter(pk=deployment.pk).exists()
    assert not Folder.objects.filter(deployment_id=deployment.pk).exists()
    assert not Workbook.objects.filter(deployment_id=deployment.pk).exists()
