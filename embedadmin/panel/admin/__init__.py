"""Registrations of the panel site (imported by Django's admin autodiscovery)."""

from embedadmin.panel.admin import accounts, directory, embedding

__all__ = ["accounts", "directory", "embedding"]
