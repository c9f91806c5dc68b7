"""Panel pages of accounts: the account and its settings, deployments, credentials, internal users."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import Count, Model, Q, QuerySet
from django.forms import BaseForm, BaseInlineFormSet, ModelForm
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import (
    Account,
    AccountMembership,
    ApiKey,
    Deployment,
    DeploymentSecret,
    PlatformToken,
    TenantSettings,
)
from embedadmin.accounts.selectors import data_source_url_redacted, deployment_data_source_url
from embedadmin.accounts.services import InternalUserChanges
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import ApiError, BadRequest
from embedadmin.embedding import internal_users
from embedadmin.panel import tenancy
from embedadmin.panel.admin.access import access_page_url, access_urls
from embedadmin.panel.forms import (
    EMBEDDING_DEFAULTS,
    TENANT_SETTING_API_NAMES,
    AccountAddForm,
    ApiKeyAddForm,
    DeploymentTenancyForm,
    InternalUserCreationForm,
    TenantSettingsForm,
)
from embedadmin.panel.panel_admin import (
    Created,
    PanelAdmin,
    PanelStackedInline,
    RevokedFilter,
    ShownOnce,
    audit_panel_change,
    page_context,
    render_shown_once,
)
from embedadmin.panel.site import panel_site
from embedadmin.semantic.serving.pre_aggregations import pre_aggregations_status
from embedadmin.semantic.serving.services import model_status
from embedadmin.semantic.tasks import serve as pre_aggregation_serve

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

User = get_user_model()

SHOWN_ONCE_NOTE = "Copy the secrets now: this page is the only place they are ever shown."


class DeploymentCount(TypedDict):
    """What AccountAdmin's queryset annotates its accounts with."""

    deployment_count: int


class ActiveSecretCount(TypedDict):
    """What DeploymentAdmin's queryset annotates its deployments with."""

    active_secret_count: int


class TenantSettingsInline(PanelStackedInline):
    model = TenantSettings
    form = TenantSettingsForm
    panel_allows = frozenset({"view", "change"})
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "use_creator_mode",
                    "max_external_users",
                    "external_user_count",
                    "max_non_ephemeral_chat_users",
                    "non_ephemeral_chat_user_count",
                )
            },
        ),
        (
            "Embedding defaults",
            {
                "fields": EMBEDDING_DEFAULTS,
                "description": "What an embedded dashboard or chat uses when its session or URL does not say.",
            },
        ),
    )
    readonly_fields = ("external_user_count", "non_ephemeral_chat_user_count")
    max_num = 1


@admin.register(Account, site=panel_site)
class AccountAdmin(PanelAdmin):
    panel_allows = frozenset({"view", "add", "change"})
    superuser_only = frozenset({"add"})
    shows_secrets_on_add = True
    list_display = ("name", "creator_mode", "external_users", "deployment_count", "created_at")
    search_fields = ("name",)
    list_filter = ("tenant_settings__use_creator_mode", "tenant_settings__show_dashboard_chat", "created_at")
    inlines = (TenantSettingsInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .select_related("tenant_settings")
            .annotate(deployment_count=Count("deployments"))
        )

    def get_fields(self, request: HttpRequest, obj: Account | None = None) -> tuple[str, ...]:
        return ("name", "creator_mode") if obj is None else ("name", "created_at", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Account | None = None) -> tuple[str, ...]:
        # The name is the account's DNS label and URL segment: it does not change.
        return () if obj is None else ("name", "created_at", "updated_at")

    def get_form(self, request: HttpRequest, obj: Account | None = None, change: bool = False, **kwargs: Any):
        if obj is None:
            kwargs["form"] = AccountAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_inlines(self, request: HttpRequest, obj: Account | None) -> tuple:
        return () if obj is None else self.inlines  # account_create makes the settings

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        created = accounts.account_create(
            name=form.cleaned_data["name"], creator_mode=form.cleaned_data["creator_mode"]
        )
        return Created(
            created.account,
            secrets=(
                ("Admin API key", created.api_key),
                ("Deployment API secret", created.deployment_api_secret),
                ("Platform token", created.platform_token),
                ("Admin username", created.admin_username),
                ("Admin password", created.admin_password),
            ),
            notes=(SHOWN_ONCE_NOTE, f"The first deployment is #{created.deployment.pk}."),
        )

    def update_through_service(self, request: HttpRequest, obj: Account, form: BaseForm) -> None:
        """Nothing of the account itself is editable; its settings are saved in :meth:`save_formset`."""

    def save_formset(
        self, request: HttpRequest, form: ModelForm[Account], formset: BaseInlineFormSet, change: bool
    ) -> None:
        assert formset.model is TenantSettings
        # What formset.save() would record, for the change message of the history.
        formset.new_objects, formset.deleted_objects, formset.changed_objects = [], [], []
        for settings_form in formset.forms:
            changes = {
                TENANT_SETTING_API_NAMES[name]: settings_form.cleaned_data[name] for name in settings_form.changed_data
            }
            if changes:
                accounts.tenant_settings_update(account=form.instance, changes=changes)
                formset.changed_objects.append((settings_form.instance, settings_form.changed_data))

    @admin.display(description="creator mode", boolean=True, ordering="tenant_settings__use_creator_mode")
    def creator_mode(self, obj: Account) -> bool:
        return obj.tenant_settings.use_creator_mode

    @admin.display(description="external users (limit)")
    def external_users(self, obj: Account) -> str:
        return f"{obj.tenant_settings.external_user_count} / {obj.tenant_settings.max_external_users}"

    @admin.display(description="deployments", ordering="deployment_count")
    def deployment_count(self, obj: WithAnnotations[Account, DeploymentCount]) -> int:
        return obj.deployment_count


@admin.register(Deployment, site=panel_site)
class DeploymentAdmin(PanelAdmin):
    panel_allows = frozenset({"view", "add", "change", "rotate"})
    shows_secrets_on_add = True
    actions = ("rotate_secret", "revoke_older_secrets")
    list_display = ("id", "name", "slug", "account", "active_secrets", "created_at")
    list_display_links = ("id", "name")
    search_fields = ("name", "slug")
    list_filter = ("account", "created_at")
    list_select_related = ("account",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        active = Count("secrets", filter=Q(secrets__revoked_at__isnull=True))
        return super().get_queryset(request).annotate(active_secret_count=active)

    # The change page: everything shown, only chat token authentication edited here (the data model settings
    # change through `manage.py configure_deployment`, which validates them).
    change_fields = (
        "id",
        "account",
        "name",
        "slug",
        "jwks_url",
        "jwt_audience",
        "jwt_issuer",
        "active_secrets",
        "model_dir",
        "load_partial_model",
        "model_state",
        "data_source",
        "chat_token_auth",
        "open_to_embed_without_policy",
        "compile_context_keys_text",
        "tenant_data_source_field_text",
        "tenant_data_sources_text",
        "pre_aggregations_schema",
        "who_can_read_what",
        "pre_aggregation_builds",
    )
    editable_on_change = (
        "chat_token_auth",
        "open_to_embed_without_policy",
        "load_partial_model",
        "pre_aggregations_schema",
    )
    # Multitenancy (docs/core-data-api.md): form fields of DeploymentTenancyForm, written by the same service.
    tenancy_fields = ("compile_context_keys_text", "tenant_data_source_field_text", "tenant_data_sources_text")
    form = DeploymentTenancyForm

    def get_fields(self, request: HttpRequest, obj: Deployment | None = None) -> tuple[str, ...]:
        return ("account", "name", "slug") if obj is None else self.change_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Deployment | None = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        return tuple(f for f in self.change_fields if f not in (*self.editable_on_change, *self.tenancy_fields))

    def get_form(self, request: HttpRequest, obj: Deployment | None = None, change: bool = False, **kwargs: Any):
        help_texts = {
            "chat_token_auth": "Accept X-Service-Auth-Token (a JWT of this deployment with the chat scope).",
            "load_partial_model": "Load what compiles: the cubes and views of the data model that compile serve, "
            "the others are listed below and in /v1/meta's compilerErrors. Unchecked, any fault refuses the model.",
            "pre_aggregations_schema": "Where the rollup pre-aggregations live. Empty: the deployment's DuckDB "
            "store. A schema name (lower-case): built into that schema of the data source itself (PostgreSQL, "
            "Snowflake, Trino, Databricks; a database on MySQL and ClickHouse, a dataset on BigQuery), and the "
            "queries they answer run there.",
            "open_to_embed_without_policy": mark_safe(
                '<span class="errornote">Unsafe. Embed viewers read only the cubes and views whose access policy '
                "grants them. Checked, every cube and view without an access policy is open to every embed viewer "
                "of this deployment, personal data included.</span>"
            ),
        }
        return super().get_form(request, obj, change=change, help_texts=help_texts, **kwargs)

    def update_through_service(self, request: HttpRequest, obj: Deployment, form: BaseForm) -> None:
        changed = {name: form.cleaned_data[name] for name in self.editable_on_change if name in form.changed_data}
        assert isinstance(form, DeploymentTenancyForm)
        if "compile_context_keys_text" in form.changed_data:
            changed["compile_context_keys"] = form.compile_context_keys()
        if {"tenant_data_source_field_text", "tenant_data_sources_text"} & set(form.changed_data):
            changed["tenant_data_sources"] = form.tenant_data_sources()
        if changed:
            accounts.deployment_configure(deployment=obj, **changed)

    def get_urls(self) -> list[URLPattern]:
        return [*access_urls(self), *super().get_urls()]

    @admin.display(description="who can read what")
    def who_can_read_what(self, obj: Deployment) -> str:
        return format_html(
            '<a href="{}" id="panel-deployment-access">Each cube and view as one embed viewer reads it</a>',
            access_page_url(obj.pk),
        )

    @admin.display(description="pre-aggregations")
    def pre_aggregation_builds(self, obj: Deployment) -> str:
        """The rollups of the model and their builds (read-only; the Platform API rebuilds them)."""
        if not obj.model_dir:
            return "-"
        try:
            statuses = pre_aggregations_status(deployment=obj, serve=pre_aggregation_serve)
        except ApiError as exc:
            return exc.message
        if not statuses:
            return "none in the model"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    s.rollup.id,
                    s.status if s.problem is None else f"{s.status}: {s.problem}",
                    f"{sum(p.built_at is not None for p in s.partitions)} of {len(s.partitions)}",
                    f"{sum(p.rows or 0 for p in s.partitions):,}",
                    f"{sum(p.bytes or 0 for p in s.partitions) / 1024:,.0f} KiB",
                    iso_time(s.last_refresh_time) or next((p.error for p in s.partitions if p.error), "-"),
                )
                for s in statuses
            ),
        )
        return format_html(
            '<table id="panel-deployment-pre-aggregations"><thead><tr><th>rollup</th><th>status</th>'
            "<th>partitions built</th><th>rows</th><th>size</th><th>last refresh (or error)</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="data model")
    def model_state(self, obj: Deployment) -> str:
        status = model_status(deployment=obj)
        if not status.configured:
            return "not configured (manage.py configure_deployment ID --model-dir DIR --data-source URL)"
        serving = (
            f"serving {status.entities} cubes and views (compiler {status.compiler_id[:12]})"
            if status.compiler_id
            else "nothing serves: the model has never compiled"
        )
        if status.left_out:
            serving = format_html(
                '{}<br><strong>Left out (they do not compile; "load what compiles" is on):</strong>'
                '<pre id="panel-deployment-left-out">{}</pre>',
                serving,
                "\n".join(status.left_out),
            )
        if not status.problems:
            return serving
        return format_html(
            "{}<br><strong>Broken files (the last good model keeps serving):</strong><pre>{}</pre>",
            serving,
            "\n".join(status.problems),
        )

    @admin.display(description="data source")
    def data_source(self, obj: Deployment) -> str:
        return data_source_url_redacted(deployment_data_source_url(deployment=obj)) or "-"

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        deployment, secret = accounts.deployment_create(account=data["account"], name=data["name"], slug=data["slug"])
        return Created(
            deployment,
            secrets=(("Deployment API secret", secret),),
            notes=(
                SHOWN_ONCE_NOTE,
                f"Deployment ID: {deployment.pk}. The secret signs (HS256) the tokens of this deployment.",
            ),
        )

    @admin.display(description="active signing secrets", ordering="active_secret_count")
    def active_secrets(self, obj: WithAnnotations[Deployment, ActiveSecretCount]) -> int:
        return obj.active_secret_count

    @admin.action(description="Add a new signing secret (rotation, step 1)", permissions=["rotate"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse:
        with transaction.atomic():  # every deployment's new secret, or none (each is shown once, below)
            rotated = [(d, *accounts.deployment_secret_rotate(deployment=d)) for d in queryset.order_by("pk")]
            for deployment, _secret, row in rotated:
                audit_panel_change(
                    request, deployment, "rotate", resource="deployment_secret", details={"secretId": row.pk}
                )
        shown = ShownOnce(
            title="New signing secrets",
            secrets=tuple((f"Deployment {d.pk} ({d.name}) API secret #{row.pk}", secret) for d, secret, row in rotated),
            notes=(
                SHOWN_ONCE_NOTE,
                "The new secret signs embed tokens from now on; the older ones still verify. Once every "
                'client signs with the new one, use "Revoke older signing secrets".',
            ),
        )
        return render_shown_once(self, request, shown, obj=None)

    @admin.action(description="Revoke older signing secrets (rotation, step 2)", permissions=["rotate"])
    def revoke_older_secrets(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """First a confirmation naming the secret kept per deployment (the newest when it is shown); then, on
        its POST, revokes the secrets older than that one. A secret made in between stays active."""
        deployments = list(queryset.order_by("pk"))
        if request.POST.get("post") != "yes":
            plans = [_revoke_plan(d) for d in deployments]
            context = {
                **page_context(self, request, title="Revoke older signing secrets", obj=None),
                "plans": plans,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "panel/revoke_older_secrets.html", context)
        revoked = 0
        # All deployments or none: a refusal (an error message, PanelAdmin.changelist_view) revokes nothing.
        with transaction.atomic():
            for deployment in deployments:
                keep = request.POST.get(f"keep_{deployment.pk}", "")
                if not (keep.isascii() and keep.isdigit()):
                    raise BadRequest(f"Deployment {deployment.pk}: no secret to keep was named.")
                count = accounts.deployment_secrets_revoke_older(deployment=deployment, keep_id=int(keep))
                details = {"keptSecretId": int(keep), "revoked": count}
                audit_panel_change(request, deployment, "revoke_older", resource="deployment_secret", details=details)
                revoked += count
        self.message_user(
            request,
            f"Revoked {revoked} older signing secret{'s' if revoked != 1 else ''}; the secret kept for each "
            "deployment still signs and verifies.",
            messages.SUCCESS,
        )
        return None


@dataclass(frozen=True)
class _RevokePlan:
    """A deployment's active secrets, newest first: the first is kept, the others revoked."""

    deployment: Deployment
    active: list[DeploymentSecret]

    @property
    def keep(self) -> DeploymentSecret | None:
        return self.active[0] if self.active else None


def _revoke_plan(deployment: Deployment) -> _RevokePlan:
    active = deployment.secrets.filter(revoked_at__isnull=True)  # newest first: DeploymentSecret.Meta.ordering
    return _RevokePlan(deployment, list(active))


class CredentialAdmin(PanelAdmin):
    """API keys and platform tokens: created through a service, shown once, revoked, never edited."""

    panel_allows = frozenset({"view", "add", "revoke"})
    shows_secrets_on_add = True
    actions = ("revoke_selected",)
    list_select_related = ("account",)
    kind_tag = ""  # the credential's leading tag, as minted
    secret_label = ""  # what the add page calls the secret it shows once
    send_as = ""  # the Authorization header that carries it

    def created(self, credential: ApiKey | PlatformToken, plaintext: str) -> Created:
        """The add page's answer: the credential's secret, shown this once, and how to send it."""
        return Created(
            credential,
            secrets=((self.secret_label, plaintext),),
            notes=(SHOWN_ONCE_NOTE, f"Only its SHA-256 digest is stored. Send it as: {self.send_as}"),
        )

    def revoke_credential(self, credential: Any) -> None:
        raise NotImplementedError

    @admin.action(description="Revoke selected %(verbose_name_plural)s", permissions=["revoke"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        with transaction.atomic():
            active = list(queryset.filter(revoked_at__isnull=True))
            for credential in active:
                self.revoke_credential(credential)
                audit_panel_change(request, credential, "revoke")
        noun = self.opts.verbose_name if len(active) == 1 else self.opts.verbose_name_plural
        self.message_user(request, f"Revoked {len(active)} {noun}.", messages.SUCCESS)

    @admin.display(description="key", ordering="prefix")
    def masked(self, obj: ApiKey | PlatformToken) -> str:
        return f"{self.kind_tag}_{obj.prefix}_…"

    @admin.display(description="status", ordering="revoked_at")
    def status(self, obj: ApiKey | PlatformToken) -> str:
        return "revoked" if obj.revoked_at else "active"


@admin.register(ApiKey, site=panel_site)
class ApiKeyAdmin(CredentialAdmin):
    kind_tag = accounts.API_KEY_KIND
    secret_label = "API key"
    send_as = "Authorization: Api-Key <key>"
    form = ApiKeyAddForm
    list_display = ("masked", "name", "kind", "account", "owner", "scope", "created_at", "status")
    search_fields = ("name", "prefix", "owner__username")
    list_filter = (RevokedFilter, "kind", "account", "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("owner").prefetch_related("deployments")

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("account", "name", "owner", "deployments")
        return ("account", "name", "kind", "owner", "masked", "scope", "created_at", "status", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        return () if obj is None else ("masked", "scope", "created_at", "status")

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        plaintext, key = accounts.api_key_create(
            account=data["account"],
            name=data["name"],
            personal_owner=data["owner"],
            deployment_ids=[d.pk for d in data["deployments"]],
        )
        return self.created(key, plaintext)

    def revoke_credential(self, credential: ApiKey) -> None:
        accounts.api_key_revoke(key=credential)

    @admin.display(description="deployments")
    def scope(self, obj: ApiKey) -> str:
        return ", ".join(f"#{d.pk}" for d in obj.deployments.all()) or "all"


@admin.register(PlatformToken, site=panel_site)
class PlatformTokenAdmin(CredentialAdmin):
    kind_tag = accounts.PLATFORM_TOKEN_KIND
    secret_label = "Platform token"
    send_as = "Authorization: Bearer <token>"
    list_display = ("masked", "name", "account", "created_at", "status")
    search_fields = ("name", "prefix")
    list_filter = (RevokedFilter, "account", "created_at")

    def get_fields(self, request: HttpRequest, obj: PlatformToken | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("account", "name")
        return ("account", "name", "masked", "created_at", "status", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: PlatformToken | None = None) -> tuple[str, ...]:
        return () if obj is None else ("masked", "created_at", "status")

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        plaintext, token = accounts.platform_token_create(
            account=form.cleaned_data["account"], name=form.cleaned_data["name"]
        )
        return self.created(token, plaintext)

    def revoke_credential(self, credential: PlatformToken) -> None:
        accounts.platform_token_revoke(token=credential)


class MembershipInline(PanelStackedInline):
    model = AccountMembership
    panel_allows = frozenset({"view", "change"})
    fields = ("account", "is_admin")
    readonly_fields = ("account",)
    max_num = 1


# What an account administrator may edit of a user: no superuser flag, no Django permissions.
# The user fields the internal-user lifecycle owns, and those of Django's own that the panel saves as they are.
USER_LIFECYCLE_FIELDS = ("username", "email", "first_name", "last_name", "is_active")
DJANGO_USER_FIELDS = ("is_staff", "is_superuser")

ACCOUNT_ADMIN_USER_FIELDSETS = (
    (None, {"fields": ("username", "password")}),
    ("Personal info", {"fields": ("first_name", "last_name", "email")}),
    ("Panel access", {"fields": ("is_active", "is_staff")}),
    ("Important dates", {"fields": ("last_login", "date_joined")}),
)


@admin.register(User, site=panel_site)
class InternalUserAdmin(PanelAdmin, UserAdmin):
    """Internal users: Django users with an account membership (superusers see operators as well)."""

    panel_allows = frozenset({"view", "add", "change"})
    add_form = InternalUserCreationForm
    add_fieldsets = (
        (
            None,
            {
                "classes": ("wide",),
                "fields": ("account", "username", "email", "is_admin", "usable_password", "password1", "password2"),
            },
        ),
    )
    list_display = ("username", "email", "account", "account_admin", "is_active", "is_staff", "last_login")
    list_select_related = ("membership__account",)
    search_fields = ("username", "email", "first_name", "last_name")
    list_filter = ("membership__is_admin", "is_active", "is_staff", "membership__account")
    inlines = (MembershipInline,)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None or tenancy.viewer(request).is_superuser:
            return super().get_fieldsets(request, obj)
        return ACCOUNT_ADMIN_USER_FIELDSETS

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("last_login", "date_joined") if obj is not None else ()

    def get_inlines(self, request: HttpRequest, obj: Any) -> tuple:
        return () if obj is None else self.inlines  # internal_user_create makes the membership

    def create_through_service(self, request: HttpRequest, form: BaseForm) -> Created:
        data = form.cleaned_data
        user = accounts.internal_user_create(
            account=data["account"],
            username=data["username"],
            email=data.get("email") or "",
            password=data["password1"] if data["set_usable_password"] else None,
            is_admin=data["is_admin"],
        )
        return Created(user)

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        # Django's page saves the password and logs the change without a transaction; the audit entry must share
        # the change's (docs/audit-log.md).
        with transaction.atomic():
            return super().user_change_password(request, id, form_url)

    def update_through_service(self, request: HttpRequest, obj: Model, form: BaseForm) -> None:
        """An account's user changes through the one lifecycle the Platform API and SCIM use (unique names without
        regard to case; deactivating revokes sessions, tokens and personal keys at once). The fields only a
        superuser sees (staff, superuser, permissions) and users of no account (operators) are saved as Django's."""
        membership = AccountMembership.objects.select_related("account").filter(user_id=obj.pk).first()
        owned = {f: form.cleaned_data[f] for f in USER_LIFECYCLE_FIELDS if f in form.changed_data}
        others = [f for f in form.changed_data if f not in USER_LIFECYCLE_FIELDS and f in DJANGO_USER_FIELDS]
        if membership is None:
            obj.save()
            return
        with transaction.atomic():
            user = internal_users.internal_user_save(
                account=membership.account, user=cast(Any, obj), changes=InternalUserChanges(**owned)
            )
            if others:
                for field in others:
                    setattr(user, field, form.cleaned_data[field])
                user.save(update_fields=others)

    @admin.display(description="account", ordering="membership__account__name")
    def account(self, obj: Any) -> str:
        membership = getattr(obj, "membership", None)
        return membership.account.name if membership else "—"

    @admin.display(description="account admin", boolean=True, ordering="membership__is_admin")
    def account_admin(self, obj: Any) -> bool:
        membership = getattr(obj, "membership", None)
        return bool(membership and membership.is_admin)
