"""Registrations of the panel site (imported by Django's admin autodiscovery)."""

from embedadmin.panel.admin import accounts, audit, chat, dashboards, directory, embedding

__all__ = ["accounts", "audit", "chat", "dashboards", "directory", "embedding"]
