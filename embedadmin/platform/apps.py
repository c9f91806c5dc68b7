from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "embedadmin.platform"
    label = "platform"
