"""What every panel admin shares: permissions, tenant scoping, writes through services, secrets shown once.

A panel admin never relies on Django's per-model permissions: it says what the panel allows on its
model (``panel_allows``, less ``superuser_only`` for account administrators) and the viewer's
account scopes everything it shows (:mod:`embedadmin.panel.tenancy`).

State changes go through the service that owns them (STYLE "one write path"): an admin implements
``create_through_service`` / ``update_through_service`` / ``delete_through_service`` and Django's
save and delete hooks call them. A service's :class:`ApiError` is shown on the form when a form was
submitted (the failed save is rolled back and the form shown again with the error) and as an error
message elsewhere, never as a server error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from django.contrib import admin, messages
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.widgets import RelatedFieldWidgetWrapper
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.forms import BaseForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.text import capfirst

from embedadmin.audit.audited_views import actor_of
from embedadmin.audit.services import Change, entry_record
from embedadmin.core.errors import ApiError
from embedadmin.panel import tenancy

# "view", "add", "change", "delete", or an admin action's or page's permission ("revoke", "mint", "rotate",
# "publish", "share", "preview").
PanelAction = str
# What ModelAdmin.get_list_display() answers: field names and display callables.
ListDisplay = list[str | Callable[[Any], str | bool]] | tuple[str | Callable[[Any], str | bool], ...]

F = TypeVar("F", bound=BaseForm)

if TYPE_CHECKING:  # the admins the mixins below are combined with, for the type checker only
    _AdminBase = admin.options.BaseModelAdmin[Any]
    _InlineBase = admin.options.InlineModelAdmin[Any, Any]
else:
    _AdminBase = _InlineBase = object


@dataclass(frozen=True)
class ShownOnce:
    """A page that shows secrets right after they were made; they are never stored in clear or shown again."""

    title: str
    secrets: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Created:
    """What a service created for an add form, and the secrets to show once (if any)."""

    instance: Model
    secrets: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


def resource_name(obj: Model) -> str:
    """How the audit log names a model: ``ApiKey`` -> ``api_key``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(obj).__name__).lower()


def audit_panel_change(
    request: HttpRequest, obj: Model, verb: str, *, resource: str | None = None, details: dict[str, Any] | None = None
) -> None:
    """Record a change made in the panel in the audit log of ``obj``'s account, inside the change's transaction.
    Django's add, change and delete pages reach it through the ``log_*`` hooks of :class:`PanelAdmin`; the
    panel's own actions (revoke, rotate, publish, share) call it where they write."""
    account_id = tenancy.account_id_of(obj)
    if account_id is None:  # an install-level row (a superuser): no account's log holds it
        return
    _, actor = actor_of(request, via="panel")
    resource = resource or resource_name(obj)
    change = Change(action=f"{resource}.{verb}", resource_type=resource, resource_id=str(obj.pk), details=details or {})
    entry_record(account_id=account_id, actor=actor, change=change)


# The resource types the HTTP APIs record for a panel model, besides the panel's own name (``resource_name``).
AUDIT_ALIASES: dict[str, tuple[str, ...]] = {
    "user": ("scim_user",),
    "group": ("scim_group", "embed_tenant_group"),
    "attribute_definition": ("user_attribute", "embed_tenant_attribute"),
    "external_user": ("embed_user",),
}


def _changed_fields(message: Any) -> list[str]:
    """The field names of Django's change message (``[{"changed": {"fields": [...]}}, ...]``), never values."""
    fields: list[str] = []
    for part in message if isinstance(message, list) else []:
        for kind in ("changed", "added", "deleted"):
            described = part.get(kind) if isinstance(part, dict) else None
            if isinstance(described, dict):
                fields += [str(f) for f in described.get("fields", [])] or [str(described.get("name", kind))]
    return fields


def scoped_form(form_class: type[F], request: HttpRequest, *, service_error: str | None = None) -> type[F]:
    """``form_class`` with its model choices limited to the viewer's account and cross-account
    combinations refused; with ``service_error``, the form is invalid and shows that error."""

    class PanelForm(form_class):  # type: ignore[valid-type,misc]  # mypy cannot subclass a class held in a variable
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            tenancy.restrict_form_choices(self, request)

        def clean(self) -> dict[str, Any]:
            super().clean()
            tenancy.check_same_account(self.cleaned_data)
            if service_error:
                raise ValidationError(service_error)
            return self.cleaned_data

    PanelForm.__name__ = form_class.__name__
    PanelForm.__qualname__ = form_class.__qualname__
    return PanelForm


def page_context(model_admin: admin.ModelAdmin, request: HttpRequest, *, title: str, obj: Model | None) -> dict:
    """The context of a panel page about a model (and one object of it), for ``panel/_breadcrumbs.html``."""
    opts = model_admin.opts
    return {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": opts,
        "object": obj,
        "object_url": (
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]) if obj is not None else None
        ),
        "changelist_url": reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"),
        "media": model_admin.media,
    }


def object_missing_redirect(model_admin: admin.ModelAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    """What Django's admin answers for an object the viewer cannot see (another account's as well): back to the
    index with a message, the same for every id."""
    message = f'{capfirst(model_admin.opts.verbose_name)} with ID "{object_id}" does not exist. Perhaps it was deleted?'
    model_admin.message_user(request, message, messages.WARNING)
    return HttpResponseRedirect(reverse("admin:index"))


def render_shown_once(
    model_admin: admin.ModelAdmin, request: HttpRequest, shown: ShownOnce, *, obj: Model | None
) -> TemplateResponse:
    """The page after a state change that produced secrets; not cacheable, as it holds them."""
    context = {**page_context(model_admin, request, title=shown.title, obj=obj), "shown": shown}
    response = TemplateResponse(request, "panel/shown_once.html", context)
    add_never_cache_headers(response)
    return response


def _adopt(target: Model, source: Model) -> None:
    """Make the admin's unsaved add-form instance the row a service created: Django's add view goes
    on to log and redirect with ``target``."""
    for field in source._meta.concrete_fields:
        setattr(target, field.attname, getattr(source, field.attname))
    target._state.adding = False
    target._state.db = source._state.db


class PanelAdminMixin(_AdminBase):
    """Permissions and tenant scoping, for model admins and inlines alike."""

    panel_allows: frozenset[PanelAction] = frozenset({"view"})
    superuser_only: frozenset[PanelAction] = frozenset()

    def panel_allowed(self, request: HttpRequest, what: PanelAction) -> bool:
        who = tenancy.viewer(request)
        if what not in self.panel_allows or not who.may_use_panel:
            return False
        return who.is_superuser or what not in self.superuser_only

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "view")

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self.panel_allowed(request, "view")

    # ModelAdmin calls this with the request only, InlineModelAdmin with the parent object as well.
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self.panel_allowed(request, "add")

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self.panel_allowed(request, "change")

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self.panel_allowed(request, "delete")

    # Permissions of admin actions (``@admin.action(permissions=[...])``).
    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "revoke")

    def has_mint_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "mint")

    def has_rotate_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "rotate")

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "publish")

    def has_share_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "share")

    def has_preview_permission(self, request: HttpRequest) -> bool:
        return self.panel_allowed(request, "preview")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return tenancy.restrict(super().get_queryset(request), request)


class PanelInlineMixin(PanelAdminMixin, _InlineBase):
    """An inline, scoped like its parent; read-only unless it says otherwise."""

    extra = 0
    can_delete = False

    def get_formset(self, request: HttpRequest, obj: Model | None = None, **kwargs: Any):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form = scoped_form(formset.form, request, service_error=_service_error(request))
        return formset


class PanelReadOnlyInline(PanelInlineMixin, admin.TabularInline):
    """Related rows shown as a plain table, view only."""

    template = "panel/readonly_inline.html"

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self.fields)  # the inline's plain field names, all read-only


class PanelStackedInline(PanelInlineMixin, admin.StackedInline):
    pass


class PanelAdmin(PanelAdminMixin, admin.ModelAdmin):
    """Base of every panel model admin."""

    # Whether the add form's service hands back secrets (then "save and add another" makes no sense).
    shows_secrets_on_add = False

    # --- writes through services (``obj``: an instance of the admin's model; each admin's hooks say which) ---

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        raise NotImplementedError(f"{type(self).__name__} creates nothing")

    def update_through_service(self, request: HttpRequest, obj: Any, form: BaseForm) -> None:
        raise NotImplementedError(f"{type(self).__name__} changes nothing")

    def delete_through_service(self, obj: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} deletes nothing")

    def save_model(self, request: HttpRequest, obj: Model, form: BaseForm, change: bool) -> None:
        if change:
            self.update_through_service(request, obj, form)
            return
        created = self.create_through_service(request, form)
        _adopt(obj, created.instance)
        request.__dict__["_panel_created"] = created  # for response_add, on this request only

    def save_related(self, request: HttpRequest, form: BaseForm, formsets: Iterable, change: bool) -> None:
        # On add, the service wrote everything the form carried (many-to-many choices included).
        if change:
            super().save_related(request, form, formsets, change)

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        self.delete_through_service(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        # All or nothing: the first refusal rolls back the ones before it (and their audit entries).
        with transaction.atomic():
            for obj in queryset:
                audit_panel_change(request, obj, "delete")
                self.delete_through_service(obj)

    # --- the audit log: Django's admin log hooks write our entries instead of its LogEntry rows ---------------
    # Django calls them inside the transaction of the add, change or delete page (changeform_view, delete_view),
    # and ignores what they return (a LogEntry in its signature: we write none, hence the ignores).

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        """An object's history is its entries in the audit log (Django's own log is not written)."""
        obj = self.get_object(request, object_id)
        if obj is None or not self.has_view_permission(request, obj):
            return object_missing_redirect(self, request, object_id)
        name = resource_name(obj)
        types = ",".join((name, *AUDIT_ALIASES.get(name, ())))
        url = reverse("admin:audit_auditentry_changelist")
        return HttpResponseRedirect(f"{url}?resource_type__in={types}&resource_id={obj.pk}")

    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> None:  # type: ignore[override]
        audit_panel_change(request, obj, "create")

    def log_change(self, request: HttpRequest, obj: Model, message: Any) -> None:  # type: ignore[override]
        audit_panel_change(request, obj, "update", details={"fields": _changed_fields(message)})

    def log_deletions(self, request: HttpRequest, queryset: Any) -> None:  # type: ignore[override]
        # The delete page calls this in its transaction, then delete_model; the "delete selected" action calls it
        # outside any, then delete_queryset, which records each deletion in its own transaction (above).
        if request.__dict__.get("_panel_delete_page"):
            for obj in queryset:
                audit_panel_change(request, obj, "delete")

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple:
        # The delete service decides what goes with an object; read-only related admins must not block it.
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    # --- forms -----------------------------------------------------------------------------------------

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        form = super().get_form(request, obj, change=change, **kwargs)
        return scoped_form(form, request, service_error=_service_error(request))

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        formfield = super().formfield_for_dbfield(db_field, request, **kwargs)
        # Adding a related object in a popup would skip the page that shows its secrets once.
        if formfield is not None and isinstance(formfield.widget, RelatedFieldWidgetWrapper):
            formfield.widget.can_add_related = False
        return formfield

    def get_list_display(self, request: HttpRequest) -> ListDisplay:
        # An account administrator's rows are all of one account: the column says nothing.
        columns = super().get_list_display(request)
        if tenancy.viewer(request).is_superuser:
            return columns
        return [c for c in columns if c != "account"]

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        """Filters on a relation list only the related objects of visible rows (Django's default would
        list every account's); an account administrator gets no filter by account (they have one)."""
        is_superuser = tenancy.viewer(request).is_superuser
        filters: list[Any] = []
        for entry in super().get_list_filter(request):
            if not isinstance(entry, str):
                filters.append(entry)
                continue
            if entry.split("__")[-1] == "account" and not is_superuser:
                continue
            is_relation = get_fields_from_path(self.model, entry)[-1].is_relation
            filters.append((entry, admin.RelatedOnlyFieldListFilter) if is_relation else entry)
        return filters

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Model | None = None,
    ) -> HttpResponse:
        if add and self.shows_secrets_on_add:
            context.update(show_save_and_add_another=False, show_save_and_continue=False)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    def response_add(self, request: HttpRequest, obj: Model, post_url_continue: str | None = None) -> HttpResponse:
        created: Created | None = getattr(request, "_panel_created", None)
        if created is not None and created.secrets:
            title = f"{capfirst(self.opts.verbose_name)} created"
            shown = ShownOnce(title=title, secrets=created.secrets, notes=created.notes)
            return render_shown_once(self, request, shown, obj=obj)
        return super().response_add(request, obj, post_url_continue)

    # --- service errors ----------------------------------------------------------------------------------

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context=None
    ):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApiError as exc:
            if request.method != "POST" or _service_error(request) is not None:
                raise
            # The failed save was rolled back: show the submitted form again, invalid, with the error.
            request.__dict__["_panel_service_error"] = exc.message  # for the forms, on this request only
            return super().changeform_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request: HttpRequest, extra_context=None) -> HttpResponse:
        return self._errors_as_messages(
            request, lambda: super(PanelAdmin, self).changelist_view(request, extra_context)
        )

    def delete_view(self, request: HttpRequest, object_id: str, extra_context=None) -> HttpResponse:
        request.__dict__["_panel_delete_page"] = True  # log_deletions records on this page (see there)
        return self._errors_as_messages(
            request, lambda: super(PanelAdmin, self).delete_view(request, object_id, extra_context)
        )

    def _errors_as_messages(self, request: HttpRequest, view: Callable[[], HttpResponse]) -> HttpResponse:
        try:
            return view()
        except ApiError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


def _service_error(request: HttpRequest) -> str | None:
    return getattr(request, "_panel_service_error", None)


class RevokedFilter(admin.SimpleListFilter):
    """Active or revoked, for credentials with a ``revoked_at``."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("active", "active"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("active", "revoked"):
            return queryset.filter(revoked_at__isnull=self.value() == "active")
        return queryset


class ScopeFilter(admin.SimpleListFilter):
    """Tenant-wide catalog or an embed tenant's own, for groups and attribute definitions."""

    title = "scope"
    parameter_name = "scope"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("tenant-wide", "tenant-wide"), ("embed-tenant", "an embed tenant's")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("tenant-wide", "embed-tenant"):
            return queryset.filter(Q(embed_tenant__isnull=self.value() == "tenant-wide"))
        return queryset
