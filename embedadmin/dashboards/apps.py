from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "embedadmin.dashboards"
    label = "dashboards"
