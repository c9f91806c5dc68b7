from django.apps import AppConfig


class PanelConfig(AppConfig):
    name = "embedadmin.panel"
    label = "panel"
