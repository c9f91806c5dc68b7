"""Tenant isolation of the admin panel, in one place.

Who may use the panel: a superuser (the operator of the install, sees every account) or an account
administrator (an active staff user whose ``AccountMembership.is_admin`` is set; sees and changes
only their own account). Everybody else, including the other internal users, is refused.

Every queryset the panel shows, every choice it offers in a form and every object it accepts from a
form goes through :func:`restrict` / :func:`restrict_form_choices` / :func:`check_same_account`.
A model missing from :data:`ACCOUNT_SCOPES` is an error, never silently visible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest

from embedadmin.accounts.models import (
    Account,
    AccountMembership,
    ApiKey,
    Deployment,
    PlatformToken,
    TenantSettings,
)
from embedadmin.audit.models import AuditEntry, DailyUsage
from embedadmin.chat.models import Agent, ChatUser
from embedadmin.dashboards.models import (
    Dashboard,
    DashboardVersion,
    EmbedAccess,
    Folder,
    Report,
    ReportSnapshot,
    Workbook,
)
from embedadmin.directory.models import (
    AttributeDefinition,
    AttributeValue,
    EmbedTenant,
    ExternalUser,
    Group,
    GroupMembership,
)
from embedadmin.embedding.models import EmbedSession

User = get_user_model()


def _via(path: str) -> Callable[[Account], Q]:
    return lambda account: Q(**{path: account})


# For each model the panel shows whose rows belong to an account through a relation: the path to that account. Both
# the scope of a viewer (``ACCOUNT_SCOPES``) and the account of a row (``account_id_of``) are read from it.
ACCOUNT_PATHS: dict[type[Model], str] = {
    TenantSettings: "account",
    Deployment: "account",
    ApiKey: "account",
    PlatformToken: "account",
    AccountMembership: "account",
    EmbedTenant: "account",
    ExternalUser: "account",
    Group: "account",
    GroupMembership: "user__account",
    AttributeDefinition: "account",
    AttributeValue: "user__account",
    EmbedSession: "account",
    Agent: "account",
    ChatUser: "account",
    Folder: "account",
    Workbook: "account",
    Report: "account",
    Dashboard: "account",
    DashboardVersion: "dashboard__account",
    ReportSnapshot: "version__dashboard__account",
    EmbedAccess: "account",
    AuditEntry: "account",
    DailyUsage: "account",
}

# For each model the panel shows: the rows of one account. Superusers are hidden from account
# administrators even when they hold a membership (an account admin could otherwise reset their password).
ACCOUNT_SCOPES: dict[type[Model], Callable[[Account], Q]] = {
    Account: lambda account: Q(pk=account.pk),
    User: lambda account: Q(membership__account=account, is_superuser=False),
    **{model: _via(path) for model, path in ACCOUNT_PATHS.items()},
}


@dataclass(frozen=True)
class PanelViewer:
    """Who is looking at the panel. ``account`` is set for account administrators only."""

    is_superuser: bool
    account: Account | None

    @property
    def may_use_panel(self) -> bool:
        return self.is_superuser or self.account is not None


def viewer(request: HttpRequest) -> PanelViewer:
    """The panel viewer of a request (computed once per request)."""
    cached = getattr(request, "_panel_viewer", None)
    if cached is None:
        cached = viewer_of(request.user)
        request.__dict__["_panel_viewer"] = cached  # an attribute of this request only
    return cached


def viewer_of(user: Any) -> PanelViewer:
    """What a user may see in the panel: fail-closed for inactive, non-staff and non-admin users."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return PanelViewer(is_superuser=False, account=None)
    if user.is_superuser:
        return PanelViewer(is_superuser=True, account=None)
    membership = AccountMembership.objects.select_related("account").filter(user=user, is_admin=True).first()
    return PanelViewer(is_superuser=False, account=membership.account if membership else None)


def account_id_of(obj: Model) -> int | None:
    """The account a row of a panel model belongs to (its audit log's); None for an install-level row (a superuser
    without a membership)."""
    if isinstance(obj, Account):
        return obj.pk
    if isinstance(obj, User):
        return AccountMembership.objects.filter(user=obj).values_list("account_id", flat=True).first()
    path = ACCOUNT_PATHS.get(type(obj))
    if path is None:
        return None
    *relations, account = path.split("__")
    row: Any = obj
    for relation in relations:
        row = getattr(row, relation)
    account_id: int = getattr(row, f"{account}_id")
    return account_id


def scope_of(model: type[Model], account: Account) -> Q:
    try:
        return ACCOUNT_SCOPES[model](account)
    except KeyError:
        raise ImproperlyConfigured(f"{model.__name__} has no account scope in embedadmin.panel.tenancy") from None


def restrict(queryset: QuerySet, request: HttpRequest) -> QuerySet:
    """The rows of ``queryset`` the viewer may see: all for a superuser, their account's for an
    account administrator, none for anybody else."""
    who = viewer(request)
    if who.is_superuser:
        return queryset
    if who.account is None:
        return queryset.none()
    return queryset.filter(scope_of(queryset.model, who.account))


def restrict_form_choices(form: forms.BaseForm, request: HttpRequest) -> None:
    """Limit every model choice of a form to the viewer's account.

    An account administrator's ``Account`` choice is fixed to their account (shown, not editable).
    """
    who = viewer(request)
    for field in form.fields.values():
        if not isinstance(field, forms.ModelChoiceField):
            continue
        assert field.queryset is not None  # a model choice field's
        field.queryset = restrict(field.queryset, request)
        if field.queryset.model is Account and who.account is not None:
            field.initial = who.account.pk
            field.disabled = True
            field.empty_label = None


def check_same_account(cleaned_data: dict[str, Any]) -> None:
    """Every object a form refers to must belong to the form's ``account`` (guards superusers, who
    may pick from every account, against combining two accounts' objects)."""
    account = cleaned_data.get("account")
    if not isinstance(account, Account):
        return
    errors = {}
    for name, value in cleaned_data.items():
        chosen = list(value) if isinstance(value, QuerySet) else [value]
        chosen = [obj for obj in chosen if isinstance(obj, Model) and not isinstance(obj, Account)]
        if not chosen:
            continue
        model = type(chosen[0])
        pks = {obj.pk for obj in chosen}
        inside = model._default_manager.filter(scope_of(model, account), pk__in=pks).count()
        if inside != len(pks):
            errors[name] = f"Choose from account {account.name} only."
    if errors:
        raise ValidationError(errors)
