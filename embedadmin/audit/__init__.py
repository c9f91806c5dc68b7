"""The audit room: who changed what, when and from where (``AuditEntry``), and each account's usage per day
(``DailyUsage``: sessions minted and chat messages counted, users measured). Rooms above write entries through
:mod:`.services`; the Platform API, SCIM and embedding views through :class:`.audited_views.AuditedView`, the panel
through its admin hooks.
"""
