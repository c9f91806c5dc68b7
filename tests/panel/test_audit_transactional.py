"""Panel pages audited outside the test's own transaction, as a server runs them: Django's password page saves
without a transaction of its own, and the audit entry must still share the change's."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from embedadmin.audit.models import AuditEntry
from tests.conftest import Cast
from tests.panel.conftest import admin_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_changing_a_password_in_the_panel_records_one_entry(acme_admin: Client, acme: Cast):
    admin = get_user_model().objects.get(username=acme.created.admin_username)
    before = admin.password

    response = acme_admin.post(
        admin_url("user", "password", admin),
        {
            "password1": "a-new-long-enough-passphrase",
            "password2": "a-new-long-enough-passphrase",
            "set_usable_password": "true",
            "usable_password": "true",
        },
    )

    assert response.status_code == 302, response.content[:300]
    admin.refresh_from_db()
    assert admin.password != before
    entries = AuditEntry.objects.filter(account=acme.account)
    assert [(e.action, e.resource_id, e.via) for e in entries] == [("user.update", str(admin.pk), "panel")]
    assert "a-new-long-enough-passphrase" not in str(list(entries.values()))
