from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "embedadmin.dashboards"
    label = "dashboards"

    def ready(self) -> None:
        # The semantic layer notices changed dashboards files beside a model; applying them is this app's job.
        from embedadmin.dashboards.tasks import on_dashboard_files_changed
        from embedadmin.semantic.modeling.registry import dashboard_files_changed

        dashboard_files_changed.connect(on_dashboard_files_changed, dispatch_uid="dashboards.apply_on_model_reload")
