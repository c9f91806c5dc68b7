"""The audit room: who changed what, when and from where (``AuditEntry``), and how many sessions and chat
messages each account used per day (``DailyUsage``). Rooms above write entries through :mod:`.services`; the
Platform API, SCIM and embedding views through :class:`.edge.AuditedView`, the panel through its admin hooks.
"""
