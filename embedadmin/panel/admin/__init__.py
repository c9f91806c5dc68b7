"""Registrations of the panel site (imported by Django's admin autodiscovery)."""

from embedadmin.panel.admin import accounts, chat, dashboards, directory, embedding

__all__ = ["accounts", "chat", "dashboards", "directory", "embedding"]
