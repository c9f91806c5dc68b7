"""Routes of the Core Data API, mounted twice by ``embedadmin.urls``: at ``{base_path}/`` (the default
deployment) and at ``d/<deployment_id>{base_path}/`` (a deployment named in the path)."""

from django.urls import path, re_path

from embedadmin.semantic.serving import views

urlpatterns = [
    path("v1/meta", views.meta_view),
    path("v1/load", views.load_view),
    path("v1/subscribe", views.load_view),
    path("v1/sql", views.sql_view),
    path("v1/dry-run", views.dry_run_view),
    path("v1/cubesql", views.cubesql_view),
    re_path(r"^.*$", views.not_found_view),
]
