from django.apps import AppConfig


class EmbeddingConfig(AppConfig):
    name = "embedadmin.embedding"
    label = "embedding"
