"""Registrations of the panel site (imported by Django's admin autodiscovery)."""

from embedadmin.panel.admin import accounts, chat, directory, embedding

__all__ = ["accounts", "chat", "directory", "embedding"]
