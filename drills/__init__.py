"""Fault drills: scripted, bounded faults against a real multi-process deployment on this machine.

``make drills`` (``.venv/bin/python -m drills.run``) runs every ``drills/drill_*.py``; see ``drills/README.md``
for the contract a drill follows and :mod:`drills._cluster` for the deployment it gets.
"""
