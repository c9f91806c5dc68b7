from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "embedadmin.chat"
    label = "chat"
