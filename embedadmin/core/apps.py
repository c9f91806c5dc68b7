from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "embedadmin.core"
    label = "core"
