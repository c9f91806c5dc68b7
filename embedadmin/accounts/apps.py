from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "embedadmin.accounts"
    label = "accounts"
