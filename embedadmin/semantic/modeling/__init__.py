"""Cube-format model files compiled into a model: members, joins, views, access policies, and the
registry of compiled versions."""
