from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "embedadmin.core"
    label = "core"

    def ready(self) -> None:
        from django.urls import register_converter

        from embedadmin.core.edge.ids import RowIdConverter

        # ``<id:...>`` in the URLconfs: a row id, or the route matches nothing (core/edge/ids.py).
        register_converter(RowIdConverter, "id")
