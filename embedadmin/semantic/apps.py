from django.apps import AppConfig


class SemanticConfig(AppConfig):
    name = "embedadmin.semantic"
    label = "semantic"
