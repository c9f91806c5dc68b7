"""SCIM 2.0 (RFC 7643/7644) on ``scim2-models``: the account's internal users and tenant-wide groups.

``resources`` maps our rows to SCIM resources and back, ``filters`` turns a SCIM filter into a database query,
``views`` are the HTTP edge. Writes go through ``embedadmin.embedding.internal_users`` (users) and the
directory's services (groups). Contract: ``docs/scim.md``.
"""
