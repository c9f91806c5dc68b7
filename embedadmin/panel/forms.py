"""Forms of the panel that are more than a model's fields. Their model choices are scoped to the
viewer's account by :func:`embedadmin.panel.panel_admin.scoped_form` / the views that build them."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AdminUserCreationForm
from django.db.models import QuerySet

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Account, ApiKey, Deployment, TenantSettings
from embedadmin.chat.models import Agent
from embedadmin.core.errors import ApiError
from embedadmin.core.fields import contains_nul, has_non_finite, loads_json
from embedadmin.directory.models import EmbedTenant, ExternalUser

User = get_user_model()


class AccountAddForm(forms.ModelForm):
    """A new account: its name and whether creator mode is on (``accounts.services.account_create``)."""

    creator_mode = forms.BooleanField(
        required=False,
        label="Creator mode",
        help_text="Sets the tenant flag useCreatorMode: sessions may define their own groups and attributes.",
    )

    class Meta:
        model = Account
        fields = ("name",)
        help_texts = {
            "name": "The accountName: lowercase letters, digits and '-', the first label of the account host."
        }


class InternalUserCreationForm(AdminUserCreationForm):
    """A new internal user of an account (``accounts.services.internal_user_create``)."""

    account = forms.ModelChoiceField(queryset=Account.objects.all())
    is_admin = forms.BooleanField(
        required=False,
        label="Account administrator",
        help_text="Administrators may log in to this panel and manage their account.",
    )

    class Meta(AdminUserCreationForm.Meta):
        fields = ("username", "email")


class ApiKeyAddForm(forms.ModelForm):
    """A new API key: admin (no owner) or personal (an owner), for all deployments or some."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "owner" in self.fields:
            owner = cast("forms.ModelChoiceField[Any]", self.fields["owner"])  # the model form's field of a foreign key
            owner.queryset = User.objects.filter(membership__isnull=False).order_by("username")

    class Meta:
        model = ApiKey
        fields = ("account", "name", "owner", "deployments")
        labels = {"owner": "Personal key owner", "deployments": "Limit to deployments"}
        help_texts = {
            "owner": "Leave empty for an admin key, which acts for the account. A personal key belongs to one "
            "internal user and cannot mint sessions.",
            "deployments": "None selected: the key is valid for every deployment of the account.",
        }
        widgets = {"deployments": forms.CheckboxSelectMultiple}


class AgentAddForm(forms.ModelForm):
    """A new agent; the API key of an OpenAI-compatible endpoint is written once, stored encrypted, never shown."""

    base_url = forms.URLField(
        label="Base URL",
        required=False,
        max_length=Agent._meta.get_field("base_url").max_length,
        assume_scheme="https",
        help_text="For an OpenAI-compatible agent: the endpoint's base URL, e.g. https://api.openai.com/v1.",
    )
    api_key = forms.CharField(
        label="Provider API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="For an OpenAI-compatible agent: the key its endpoint expects (stored encrypted, never shown).",
    )

    class Meta:
        model = Agent
        # base_url is declared above (a model URLField would build a form field assuming http://).
        fields = ("account", "deployment", "name", "provider", "model")


class MintSessionForm(forms.Form):
    """The deployment an embed session minted from the panel is for."""

    deployment: forms.ModelChoiceField[Deployment] = forms.ModelChoiceField(
        queryset=None, widget=forms.RadioSelect, empty_label=None
    )

    def __init__(self, *args: Any, deployments: QuerySet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast("forms.ModelChoiceField[Deployment]", self.fields["deployment"])
        field.queryset = deployments
        if len(deployments) == 1:
            field.initial = deployments[0].pk


# Tenant settings are written through ``tenant_settings_update``, which speaks the Platform API's names.
TENANT_SETTING_API_NAMES = {field: api_name for api_name, (field, _check) in accounts.TENANT_SETTING_FIELDS.items()}


class OriginsField(forms.Field):
    """A list of origins written one a line (blank lines ignored); the service checks each."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return value
        return [line.strip() for line in (value or "").splitlines() if line.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.to_python(initial) != self.to_python(data)


# The settings an embedded dashboard or chat falls back on when its session or URL does not say.
EMBEDDING_DEFAULTS = (
    "embed_allowed_origins",
    "show_dashboard_chat",
    "allow_ai",
    "allow_export",
    "embed_locale",
    "embed_timezone",
    "restrict_data_download",
    "embed_theme",
)


class TenantSettingsForm(forms.ModelForm):
    """An account's settings. Each changed value is checked by the rule ``tenant_settings_update`` applies
    (``accounts.services.TENANT_SETTING_FIELDS``), so a bad value is an error next to its field; the write
    itself goes through that service (``AccountAdmin.save_formset``)."""

    embed_allowed_origins = OriginsField(
        required=False,
        label="Embed allowed origins",
        help_text="One origin a line (https://app.example.com, http://127.0.0.1:4100): the pages that may frame "
        "/embed/* (Content-Security-Policy frame-ancestors) and receive its messages. None: only this site.",
    )

    class Meta:
        model = TenantSettings
        fields = ("use_creator_mode", *EMBEDDING_DEFAULTS, "max_external_users", "max_non_ephemeral_chat_users")
        labels = {"embed_locale": "Embed locale", "embed_timezone": "Embed time zone", "allow_ai": "Allow AI"}
        help_texts = {
            "show_dashboard_chat": "Default of a session's showDashboardChat: the chat panel on embedded dashboards.",
            "allow_ai": "Off: embedded dashboards get no chat at all and the chat endpoints refuse embed tokens.",
            "allow_export": "Default of a session's allowExport: whether embed viewers may download data (CSV, PNG). "
            "A URL may only turn it off.",
            "embed_locale": "Default locale of embeds (BCP-47, e.g. en-US); a session or the URL may override it.",
            "embed_timezone": "Default time zone of embeds (IANA, e.g. Europe/Paris); a session or the URL may "
            "override it.",
            "restrict_data_download": "On: no CSV export from embedded dashboards, whatever the URL says.",
            "embed_theme": 'The account\'s embedTheme, e.g. {"primaryColor": "#7a77ff", "font": "Inter"}.',
        }

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        for name in self.changed_data:
            api_name = TENANT_SETTING_API_NAMES.get(name)
            if api_name is None or name in self.errors:
                continue
            _field, check = accounts.TENANT_SETTING_FIELDS[api_name]
            try:
                cleaned[name] = check(cleaned.get(name), name=api_name)
            except ApiError as exc:
                self.add_error(name, exc.message)
        return cleaned


class ExternalUserChoiceField(forms.ModelChoiceField):
    """External users by external id, with their embed tenant."""

    def label_from_instance(self, obj: ExternalUser) -> str:
        return f"{obj.external_id} ({obj.embed_tenant.name})" if obj.embed_tenant else obj.external_id


class ViewerTyping:
    """A viewer typed in a form: ``groups`` as names separated by commas, ``attributes`` as ``name=value`` lines."""

    cleaned_data: dict[str, Any]

    def clean_groups(self) -> list[str]:
        return [name.strip() for name in self.cleaned_data["groups"].split(",") if name.strip()]

    def clean_attributes(self) -> list[tuple[str, str]]:
        pairs = []
        for number, line in enumerate(self.cleaned_data["attributes"].splitlines(), start=1):
            if not line.strip():
                continue
            name, equals, value = line.partition("=")
            if not equals or not name.strip():
                raise forms.ValidationError(f"Line {number}: write name=value.")
            pairs.append((name.strip(), value.strip()))
        return pairs


class PreviewViewerForm(ViewerTyping, forms.Form):
    """Who to preview a dashboard as: an external user of the account as they are, or a viewer typed here."""

    external_user = ExternalUserChoiceField(
        queryset=None,
        required=False,
        label="External user",
        help_text="Previews as this viewer is: their embed tenant, groups and attribute values.",
    )
    external_id = forms.CharField(
        required=False,
        max_length=255,
        label="Or a viewer: external id",
        help_text="Made or updated by the mint like any viewer of generate-session (it counts under the cap), "
        "with exactly the groups and attributes below.",
    )
    embed_tenant = forms.CharField(required=False, max_length=255, label="Embed tenant")
    groups = forms.CharField(
        required=False, label="Groups", help_text="Names of tenant-wide groups, separated by commas."
    )
    attributes = forms.CharField(
        required=False,
        label="Attributes",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 40}),
        help_text='One name=value a line, of tenant-wide attribute definitions (numbers as 5, arrays as ["a", "b"]).',
    )

    def __init__(self, *args: Any, external_users: QuerySet[ExternalUser], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = cast("ExternalUserChoiceField", self.fields["external_user"])
        field.queryset = external_users.select_related("embed_tenant").order_by("external_id")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        typed = any(cleaned.get(name) for name in ("external_id", "embed_tenant", "groups", "attributes"))
        if cleaned.get("external_user") is not None and typed:
            raise forms.ValidationError("Pick an external user or type a viewer, not both.")
        if cleaned.get("external_user") is None and not cleaned.get("external_id") and not self.errors:
            raise forms.ValidationError("Pick an external user, or type a viewer's external id.")
        return cleaned


class AccessViewerForm(ViewerTyping, forms.Form):
    """Who can read what: a deployment, and a viewer (an external user as they are, or an embed tenant, groups and
    attribute values). Sent with GET, so that a page of it can be linked to (the preview links to its viewer's)."""

    deployment: forms.ModelChoiceField[Deployment] = forms.ModelChoiceField(
        queryset=None, label="Deployment", empty_label=None
    )
    external_user = ExternalUserChoiceField(
        queryset=None,
        required=False,
        label="External user",
        help_text="As this viewer is: their groups and attribute values.",
    )
    embed_tenant: forms.ModelChoiceField[EmbedTenant] = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Embed tenant",
        help_text="The session's embed tenant; an external user's own when left empty.",
    )
    groups = forms.CharField(
        required=False,
        label="Groups",
        help_text="Or a viewer with these tenant-wide groups, separated by commas.",
    )
    attributes = forms.CharField(
        required=False,
        label="Attributes",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 40}),
        help_text='One name=value a line (numbers as 5, arrays as ["a", "b"]); the others get their defaults.',
    )
    security_context = forms.CharField(
        required=False,
        label="Security context",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40}),
        help_text="A JSON object, as a host sends securityContext to generate-session.",
    )

    def __init__(
        self,
        *args: Any,
        deployments: QuerySet[Deployment],
        external_users: QuerySet[ExternalUser],
        embed_tenants: QuerySet[EmbedTenant],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        cast("forms.ModelChoiceField[Deployment]", self.fields["deployment"]).queryset = deployments.order_by("pk")
        users = cast("ExternalUserChoiceField", self.fields["external_user"])
        users.queryset = external_users.select_related("embed_tenant").order_by("external_id")
        tenants = cast("forms.ModelChoiceField[EmbedTenant]", self.fields["embed_tenant"])
        tenants.queryset = embed_tenants.order_by("name")

    def clean_security_context(self) -> dict[str, Any]:
        raw = self.cleaned_data["security_context"].strip()
        if not raw:
            return {}
        try:
            value = loads_json(raw)
        except ValueError:
            raise forms.ValidationError("Not valid JSON: write a JSON object.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("Write a JSON object.")
        if contains_nul(value) or has_non_finite(value):
            raise forms.ValidationError("Not a valid value.")
        return value

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        deployment = cleaned.get("deployment")
        user, tenant = cleaned.get("external_user"), cleaned.get("embed_tenant")
        if user is not None and (cleaned.get("groups") or cleaned.get("attributes")):
            raise forms.ValidationError("Pick an external user, or type groups and attributes, not both.")
        for chosen, field in ((user, "external_user"), (tenant, "embed_tenant")):
            if deployment is not None and chosen is not None and chosen.account_id != deployment.account_id:
                self.add_error(field, "Not of the deployment's account.")
        return cleaned


class EmbedAccessForm(forms.Form):
    """Share a workbook's dashboard with one embed tenant or with all embed users, or take the share back."""

    target = forms.ChoiceField(
        choices=[("tenant", "An embed tenant"), ("all", "All embed users")],
        initial="tenant",
        widget=forms.RadioSelect,
        label="Share with",
    )
    embed_tenant: forms.ModelChoiceField[EmbedTenant] = forms.ModelChoiceField(
        queryset=None, required=False, label="Embed tenant"
    )
    access = forms.ChoiceField(choices=[("read", "Share"), ("none", "Unshare")])

    def __init__(self, *args: Any, embed_tenants: QuerySet[EmbedTenant], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast("forms.ModelChoiceField[EmbedTenant]", self.fields["embed_tenant"]).queryset = embed_tenants

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if (
            cleaned.get("target") == "tenant"
            and cleaned.get("embed_tenant") is None
            and "embed_tenant" not in self.errors
        ):
            self.add_error("embed_tenant", "Choose the embed tenant.")
        return cleaned


class DeploymentTenancyForm(forms.ModelForm):
    """A deployment's change page with its multitenancy settings (``accounts.services.deployment_configure``):
    the compile-context keys, one field per line or comma-separated, and the tenant data sources, ``value = URL``
    one a line. URLs are shown with their password as ``***``; a line left so keeps the stored URL of its value."""

    compile_context_keys_text = forms.CharField(
        label="Compile-context keys",
        required=False,
        help_text="Security-context fields whose values select a compiled model (Cube's contextToAppId), "
        "comma-separated: tenant, or embed.embedTenant. A viewer whose security context lacks one is refused.",
    )
    tenant_data_source_field_text = forms.CharField(
        label="Tenant data source field",
        required=False,
        help_text="The security-context field whose value selects the data source (Cube's driverFactory). "
        "A viewer without it, or with a value not listed below, is refused.",
    )
    tenant_data_sources_text = forms.CharField(
        label="Tenant data sources",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="One a line: value = data source URL (one kind of source for all). Clear the field and this "
        "box to turn it off.",
    )

    class Meta:
        model = Deployment
        fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        deployment = self.instance
        if deployment.pk is None:
            return
        stored = accounts_selectors.deployment_tenant_data_sources(deployment=deployment)
        self.stored_sources = stored.sources
        self.initial.update(
            {
                "compile_context_keys_text": ", ".join(deployment.compile_context_keys),
                "tenant_data_source_field_text": stored.field,
                "tenant_data_sources_text": "\n".join(
                    f"{value} = {accounts_selectors.data_source_url_redacted(url)}"
                    for value, url in sorted(stored.sources.items())
                ),
            }
        )

    def compile_context_keys(self) -> list[str]:
        text = self.cleaned_data.get("compile_context_keys_text") or ""
        return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]

    def tenant_data_sources(self) -> accounts.TenantDataSources:
        """The field and sources as written; a URL left as shown (``***``) is the stored one of its value."""
        sources: dict[str, str] = {}
        for number, line in enumerate((self.cleaned_data.get("tenant_data_sources_text") or "").splitlines(), 1):
            if not line.strip():
                continue
            value, separator, url = line.partition("=")
            if not separator or not value.strip() or not url.strip():
                raise ApiError(f"Tenant data sources, line {number}: write value = data source URL")
            value, url = value.strip(), url.strip()
            stored = getattr(self, "stored_sources", {}).get(value)
            if stored is not None and url == accounts_selectors.data_source_url_redacted(stored):
                url = stored
            sources[value] = url
        field = (self.cleaned_data.get("tenant_data_source_field_text") or "").strip()
        return accounts.TenantDataSources(field=field, sources=sources)
