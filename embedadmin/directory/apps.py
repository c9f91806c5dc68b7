from django.apps import AppConfig


class DirectoryConfig(AppConfig):
    name = "embedadmin.directory"
    label = "directory"
