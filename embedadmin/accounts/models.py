"""Accounts (tenants), their settings and limits, deployments, and the credentials that act for them."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from embedadmin.core.models import TimestampedModel

ACCOUNT_NAME_RE = r"^[a-z][a-z0-9-]{0,61}[a-z0-9]$"
SLUG_RE = r"^[a-z0-9][a-z0-9-]{0,62}$"


def _default_max_external_users() -> int:
    return settings.EMBEDADMIN["DEFAULT_MAX_EXTERNAL_USERS"]


def _default_max_non_ephemeral_chat_users() -> int:
    return settings.EMBEDADMIN["DEFAULT_MAX_NON_EPHEMERAL_CHAT_USERS"]


class Account(TimestampedModel):
    """A customer of the install: the tenant everything else belongs to.

    ``name`` is the ``accountName``: the first label of the account host and the path segment of the
    Chat API URL, so it is a DNS label.
    """

    name = models.CharField(
        max_length=63,
        unique=True,
        validators=[RegexValidator(ACCOUNT_NAME_RE, "lowercase letters, digits and '-', a valid DNS label")],
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TenantSettings(models.Model):
    """Flags, embed defaults, user limits and usage counters of one account.

    ``external_user_count`` is the number of external users the account has; the cap is enforced by
    a conditional ``UPDATE ... WHERE external_user_count < max_external_users`` in the same
    transaction that inserts the user, so concurrent requests cannot overshoot it. A periodic task
    recounts it from the users table.
    """

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="tenant_settings")
    use_creator_mode = models.BooleanField(default=False)
    # Embed defaults a session inherits when it does not say (embedding.services.embed_settings_resolve).
    show_dashboard_chat = models.BooleanField(default=True)
    allow_ai = models.BooleanField(default=True)
    embed_locale = models.CharField(max_length=35, default="en-US")
    embed_timezone = models.CharField(max_length=64, default="UTC")
    restrict_data_download = models.BooleanField(default=False)
    # Whether a viewer may download data (CSV) from an embed when the session does not say; a session's
    # allowExport overrides it, URL parameters may only narrow it, restrict_data_download outranks both.
    allow_export = models.BooleanField(default=False)
    # Origins (scheme://host[:port]) whose pages may frame /embed/* (CSP frame-ancestors) and receive its messages.
    embed_allowed_origins = models.JSONField(default=list, blank=True)
    # The account's embed theme (EmbedTheme: primaryColor, font, analyticsChat, chat); a session's overrides it.
    embed_theme = models.JSONField(default=dict, blank=True)
    max_external_users = models.PositiveIntegerField(default=_default_max_external_users)
    max_non_ephemeral_chat_users = models.PositiveIntegerField(default=_default_max_non_ephemeral_chat_users)
    external_user_count = models.PositiveIntegerField(default=0)
    non_ephemeral_chat_user_count = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "tenant settings"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(external_user_count__gte=0), name="tenant_settings_external_count_nonnegative"
            ),
        ]

    def __str__(self) -> str:
        return f"settings of {self.account}"


class Deployment(TimestampedModel):
    """A semantic-layer deployment of an account: what sessions grant access to and tokens query."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="deployments")
    name = models.CharField(max_length=200)
    slug = models.CharField(max_length=63, validators=[RegexValidator(SLUG_RE, "lowercase letters, digits and '-'")])
    # Optional external token verification (RS256/ES256) in addition to the HS256 secrets.
    jwks_url = models.URLField(blank=True, default="")
    jwt_audience = models.CharField(max_length=500, blank=True, default="")
    jwt_issuer = models.CharField(max_length=500, blank=True, default="")
    # The data model: a directory of Cube-format YAML files, and where its data lives. The data source URL
    # may carry a database password, so it is encrypted at rest (written by services.deployment_configure,
    # read in clear by selectors.deployment_data_source_url).
    model_dir = models.CharField(max_length=1000, blank=True, default="")
    data_source_url_encrypted = models.TextField(blank=True, default="")
    # Chat API: accept X-Service-Auth-Token (a deployment JWT) instead of an API key.
    chat_token_auth = models.BooleanField(default=False)
    # Load what compiles: the cubes and views of the data model that compile serve, the others are listed with their
    # errors (/v1/meta's compilerErrors, the panel) instead of the whole model being refused. Off: any fault refuses.
    load_partial_model = models.BooleanField(default=False)
    # Embed viewers read only cubes and views whose access policy grants them (fail closed). This opens the cubes
    # and views that have no access policy at all to every embed viewer, as Cube does for any token. Unsafe.
    open_to_embed_without_policy = models.BooleanField(default=False)
    # Multitenancy (docs/core-data-api.md "Per-tenant models and data sources"). The security-context fields whose
    # values select a compiled model (Cube's contextToAppId; COMPILE_CONTEXT.securityContext holds just these).
    compile_context_keys = models.JSONField(default=list, blank=True)
    # The security-context field whose value selects a data source (Cube's driverFactory), and the data source URL
    # of each value, a JSON object encrypted at rest like data_source_url_encrypted (the URLs may hold passwords).
    tenant_data_source_field = models.CharField(max_length=200, blank=True, default="")
    tenant_data_sources_encrypted = models.TextField(blank=True, default="")
    # Where its rollup pre-aggregations live (Cube's CUBEJS_PRE_AGGREGATIONS_SCHEMA): "" in the deployment's DuckDB
    # store (files under PRE_AGGREGATIONS_DIR), else this schema of the data source itself (docs/pre-aggregations.md).
    pre_aggregations_schema = models.CharField("pre-aggregations schema", max_length=63, blank=True, default="")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "slug"], name="deployment_slug_unique_per_account"),
            models.CheckConstraint(
                condition=models.Q(pre_aggregations_schema="")
                | models.Q(pre_aggregations_schema__regex=r"^[a-z_][a-z0-9_]{0,62}$"),
                name="deployment_pre_aggregations_schema_identifier",
                violation_error_message="The pre-aggregations schema is a lower-case identifier: letters, digits, _",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"


class DeploymentSecret(models.Model):
    """An HS256 signing secret of a deployment, encrypted at rest. Several may be active for rotation;
    the newest active one signs, all active ones verify."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="secrets")
    encrypted_secret = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"secret #{self.pk} of deployment #{self.deployment_id} ({state})"


class AccountMembership(models.Model):
    """Makes a Django user an internal user of one account; ``is_admin`` grants account administration."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    is_admin = models.BooleanField(default=False)

    class Meta:
        ordering = ["account_id", "user_id"]

    def __str__(self) -> str:
        return f"{self.user} in {self.account}"


class ApiKey(models.Model):
    """An account API key (``Api-Key <key>``), stored as a SHA-256 digest and found by its prefix.

    Admin keys act for the account; personal keys belong to one internal user and cannot mint
    sessions. A key with deployments is limited to them; a key without is valid for all.
    """

    class Kind(models.TextChoices):
        ADMIN = "admin", "admin"
        PERSONAL = "personal", "personal"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True, default="")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ADMIN)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_digest = models.CharField(max_length=64)
    deployments = models.ManyToManyField(Deployment, blank=True, related_name="api_keys")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind="admin") | models.Q(owner__isnull=False),
                name="api_key_personal_has_owner",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} key {self.prefix}… of {self.account_id}"


class PlatformToken(models.Model):
    """A Platform API / SCIM bearer token of an account, stored as a digest."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="platform_tokens")
    name = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=16, unique=True)
    token_digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"platform token {self.prefix}… of {self.account_id}"


class RevokedToken(models.Model):
    """A deployment token revoked before its expiry, by its ``jti``; kept until the token expires."""

    jti = models.CharField(max_length=64, unique=True)
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="revoked_tokens")
    expires_at = models.DateTimeField(db_index=True)
    revoked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-revoked_at"]

    def __str__(self) -> str:
        return f"revoked {self.jti}"


class InternalUserProfile(models.Model):
    """What SCIM keeps of an internal user beyond the Django user: the identity provider's ``externalId``, the
    case-folded ``userName`` that makes user names unique without regard to case, and the rest of the SCIM
    resource (``name``, ``emails``, the enterprise extension...) as the identity provider last wrote it.

    The Django user stays authoritative for what the product uses (``username``, ``email``, ``first_name``,
    ``last_name``, ``is_active``); ``resource`` holds the attributes nothing else reads.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim_profile")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="internal_user_profiles")
    user_name_key = models.CharField(max_length=150, unique=True)
    external_id = models.CharField(max_length=255, blank=True, default="")
    display_name = models.CharField(max_length=255, blank=True, default="")
    resource = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["account_id", "user_id"]
        indexes = [models.Index(fields=["account", "external_id"], name="internal_profile_external_id")]

    def __str__(self) -> str:
        return f"profile of user #{self.user_id}"


class DeploymentEnvVariable(models.Model):
    """An environment variable of a deployment (Platform API ``/env-vars``), its value encrypted at rest like the
    data source URL. Nothing in this install reads them yet: they are stored and answered, not applied."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="env_variables")
    name = models.CharField(max_length=255)
    encrypted_value = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["deployment_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["deployment", "name"], name="deployment_env_variable_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} of deployment #{self.deployment_id}"


class IssuedToken(models.Model):
    """A record of a Core Data API token the Platform API issued (never the token itself: its ``jti``, claims and
    lifetime), so that an environment's tokens can be listed and a token revoked by its ``jti``."""

    class Kind(models.TextChoices):
        DEPLOYMENT = "deployment", "deployment"
        ENVIRONMENT = "environment", "environment"
        META_SYNC = "meta-sync", "meta-sync"

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="issued_tokens")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    environment = models.CharField(max_length=32, blank=True, default="")
    jti = models.CharField(max_length=64, unique=True)
    security_context = models.JSONField(default=dict, blank=True)
    scopes = models.JSONField(default=list, blank=True)
    issued_by = models.ForeignKey(PlatformToken, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} token {self.jti} of deployment #{self.deployment_id}"
