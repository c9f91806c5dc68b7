"""Who the viewers are: embed tenants, external users, groups and typed user attributes.

Groups and attribute definitions live in one of two scopes of an account: the tenant-wide catalog
(``embed_tenant`` is null; read-only sessions and SCIM use it) or an embed tenant's own catalog
(creator-mode sessions define and use it). Names are unique within a scope.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from embedadmin.accounts.models import Account
from embedadmin.core.models import TimestampedModel

EMBED_TENANT_NAME_RE = r"^[a-z][a-z0-9-]{3,34}[a-z0-9]$"


class EmbedTenant(TimestampedModel):
    """A customer of the host application, created on demand by ``embedTenantName``."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="embed_tenants")
    name = models.CharField(max_length=36)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="embed_tenant_unique_per_account")]

    def __str__(self) -> str:
        return self.name


class ExternalUser(TimestampedModel):
    """A viewer known to the host application by ``external_id`` (lowercased, trimmed).

    One row per account and external id; ``embed_tenant`` is the tenant of the latest session.
    """

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="external_users")
    external_id = models.CharField(max_length=255)
    embed_tenant = models.ForeignKey(
        EmbedTenant, on_delete=models.SET_NULL, null=True, blank=True, related_name="users"
    )
    email = models.EmailField(blank=True, default="")
    display_name = models.CharField(max_length=255, blank=True, default="")
    picture = models.URLField(max_length=2048, blank=True, default="")
    last_session_at = models.DateTimeField(null=True, blank=True)
    # Sessions minted for the user (counted since migration 0003); 1 tells its upsert that it inserted the row.
    session_count = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["external_id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "external_id"], name="external_user_unique_per_account")
        ]

    def __str__(self) -> str:
        return self.external_id


def _scoped_unique(model: str) -> list[models.BaseConstraint]:
    """Names unique per scope: NULL embed_tenant (tenant-wide) needs its own partial constraint."""
    return [
        models.UniqueConstraint(
            fields=["account", "name"],
            condition=Q(embed_tenant__isnull=True),
            name=f"{model}_name_unique_tenant_wide",
            violation_error_message="This name is already used in the account's tenant-wide catalog.",
        ),
        models.UniqueConstraint(
            fields=["account", "embed_tenant", "name"],
            condition=Q(embed_tenant__isnull=False),
            name=f"{model}_name_unique_in_embed_tenant",
            violation_error_message="This name is already used in this embed tenant.",
        ),
    ]


class Group(TimestampedModel):
    """A named group used by access policies; members are external users and internal users."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="groups")
    embed_tenant = models.ForeignKey(
        EmbedTenant, on_delete=models.CASCADE, null=True, blank=True, related_name="groups"
    )
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, default="")
    # The identity provider's id of a group it provisioned through SCIM (RFC 7643 externalId).
    external_id = models.CharField(max_length=255, blank=True, default="")
    # The label the identity provider gave each internal member (user id -> SCIM members[].display), if any.
    member_displays = models.JSONField(default=dict, blank=True)
    external_members = models.ManyToManyField(ExternalUser, through="GroupMembership", related_name="groups")
    internal_members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="directory_groups")

    class Meta:
        ordering = ["name", "id"]
        constraints = _scoped_unique("group")

    def __str__(self) -> str:
        return self.name if self.embed_tenant_id is None else f"{self.name} ({self.embed_tenant})"


class GroupMembership(models.Model):
    """An external user's membership in a group."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(ExternalUser, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        ordering = ["group_id", "user_id"]
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="group_membership_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.group_id}"


class AttributeDefinition(TimestampedModel):
    """A typed user attribute; the type never changes once defined."""

    class Type(models.TextChoices):
        STRING = "string"
        NUMBER = "number"
        STRING_ARRAY = "string_array"
        NUMBER_ARRAY = "number_array"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="attribute_definitions")
    embed_tenant = models.ForeignKey(
        EmbedTenant, on_delete=models.CASCADE, null=True, blank=True, related_name="attribute_definitions"
    )
    name = models.CharField(max_length=255)
    type = models.CharField(max_length=16, choices=Type.choices)
    display_name = models.CharField(max_length=255, blank=True, default="")
    default_value = models.TextField(blank=True, default="")
    description = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            *_scoped_unique("attribute_definition"),
            models.CheckConstraint(
                condition=Q(type__in=["string", "number", "string_array", "number_array"]),
                name="attribute_definition_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.type}"


class TypedAttributeValue(models.Model):
    """A user's value of one attribute definition, stored as JSON of the definition's type (checked by
    ``directory.values.value_matches_type`` before it is written)."""

    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["user_id", "definition_id"]

    def __str__(self) -> str:
        return f"{self.definition_id}={self.value!r}"  # type: ignore[attr-defined]


class AttributeValue(TypedAttributeValue):
    """The value of one attribute for one external user."""

    user = models.ForeignKey(ExternalUser, on_delete=models.CASCADE, related_name="attribute_values")
    definition = models.ForeignKey(AttributeDefinition, on_delete=models.CASCADE, related_name="values")

    class Meta(TypedAttributeValue.Meta):
        constraints = [models.UniqueConstraint(fields=["user", "definition"], name="attribute_value_unique")]


class InternalAttributeValue(TypedAttributeValue):
    """The value of one tenant-wide attribute for one internal user (written through SCIM's
    ``urn:cube:params:1.0:UserAttribute``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attribute_values")
    definition = models.ForeignKey(AttributeDefinition, on_delete=models.CASCADE, related_name="internal_values")

    class Meta(TypedAttributeValue.Meta):
        constraints = [models.UniqueConstraint(fields=["user", "definition"], name="internal_attribute_value_unique")]
