"""Our rows as SCIM resources and SCIM resources as our rows, with the models of ``scim2-models``.

A user's resource is the Django user (``userName``, ``active``, ``name.givenName/familyName``, the primary email)
over what its :class:`InternalUserProfile` keeps of the rest (``externalId``, ``displayName``, ``emails``, the
enterprise extension, any other core attribute), plus its groups and its tenant-wide attribute values under
``urn:cube:params:1.0:UserAttribute``: an extension whose schema is built from the account's attribute definitions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import scim2_models
from django.core.exceptions import ValidationError as DjangoValidationError
from pydantic import field_validator
from scim2_models import (
    Attribute,
    AuthenticationScheme,
    Bulk,
    CaseExact,
    ChangePassword,
    Context,
    EnterpriseUser,
    ETag,
    Extension,
    External,
    Filter,
    Mutability,
    Patch,
    Reference,
    Required,
    Resource,
    ResourceType,
    Returned,
    Schema,
    ScimPolicy,
    ServiceProviderConfig,
    Sort,
)
from scim2_models import Group as ScimGroup

from embedadmin.accounts.models import Account, InternalUserProfile
from embedadmin.accounts.services import InternalUserChanges
from embedadmin.core.edge.times import iso_time
from embedadmin.core.fields import EMAIL_ADDRESS_MAX_LENGTH, validate_email_address
from embedadmin.core.versions import ProcessMemory
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory.models import AttributeDefinition, Group

if TYPE_CHECKING:
    from django.contrib.auth.models import User as DjangoUser

USER_ATTRIBUTE_URN = "urn:cube:params:1.0:UserAttribute"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
MAX_RESULTS = 500
# What the service tolerates (reference 3.3): attributes it does not know are dropped, Entra's ``remove`` with a
# value selects what to remove, and Entra's ``emails[type eq "work"].value`` on a user without one creates it.
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)
# RFC 7643 2.1 ATTRNAME: a definition whose name is not one cannot be a SCIM attribute and is left out.
_ATTRNAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,254}$")
_SCIM_TYPES = {
    AttributeDefinition.Type.STRING: (Attribute.Type.string, False),
    AttributeDefinition.Type.NUMBER: (Attribute.Type.decimal, False),
    AttributeDefinition.Type.STRING_ARRAY: (Attribute.Type.string, True),
    AttributeDefinition.Type.NUMBER_ARRAY: (Attribute.Type.decimal, True),
}
# Attributes the Django user or the service owns, never kept in the profile's resource.
# Marks a user whose ``active`` a PATCH removed: it is inactive, and its resource has no ``active``.
ACTIVE_UNSET = "~activeUnset"
_NOT_STORED = (
    ACTIVE_UNSET,
    "schemas",
    "id",
    "meta",
    "groups",
    "password",
    "userName",
    "active",
    "externalId",
    "displayName",
)


class Email(scim2_models.Email):
    """RFC 7643's email of a User, its ``value`` checked by the product's one rule for an address
    (:data:`~embedadmin.core.fields.validate_email_address`) instead of pydantic's ``EmailStr``: identity providers
    send addresses on special-use domains (``ad.user@corp.local`` of an Active Directory forest), which EmailStr
    refuses. The value is kept as given."""

    value: str | None = None

    @field_validator("value")
    @classmethod
    def _an_email_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if len(value) > EMAIL_ADDRESS_MAX_LENGTH:
            raise ValueError(f"an email address holds at most {EMAIL_ADDRESS_MAX_LENGTH} characters")
        try:
            validate_email_address(value)
        except DjangoValidationError:
            raise ValueError(f"{value[:100]!r} is not a valid email address") from None
        return value


class User(scim2_models.User[scim2_models.AnyExtension]):
    """RFC 7643's User, its emails read as :class:`Email`; the schema published is scim2-models' (the attributes are
    the same)."""

    emails: list[Email] | None = None  # type: ignore[assignment]
    Emails: ClassVar[type[scim2_models.ComplexAttribute]] = Email


SERVICE_PROVIDER_CONFIG = ServiceProviderConfig(
    documentation_uri=Reference[External]("https://datatracker.ietf.org/doc/html/rfc7644"),
    patch=Patch(supported=True),
    bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
    filter=Filter(supported=True, max_results=MAX_RESULTS),
    change_password=ChangePassword(supported=False),
    sort=Sort(supported=False),
    etag=ETag(supported=False),
    authentication_schemes=[
        AuthenticationScheme(
            type=AuthenticationScheme.Type.oauthbearertoken,
            name="Platform token",
            description="Authorization: Bearer <platform token of the account>",
            primary=True,
        )
    ],
)


def attribute_schema(definitions: Iterable[AttributeDefinition]) -> Schema | None:
    """The schema of ``urn:cube:params:1.0:UserAttribute`` for the account's tenant-wide definitions (None when
    it has none a SCIM attribute can name)."""
    attributes = []
    for definition in sorted(definitions, key=lambda d: d.name):
        if not _ATTRNAME_RE.match(definition.name) or definition.type not in _SCIM_TYPES:
            continue
        scim_type, multi_valued = _SCIM_TYPES[AttributeDefinition.Type(definition.type)]
        attributes.append(
            Attribute(
                name=definition.name,
                type=scim_type,
                multi_valued=multi_valued,
                description=definition.description or definition.display_name or definition.name,
                required=Required.false,
                case_exact=CaseExact.true,
                mutability=Mutability.read_write,
                returned=Returned.default,
            )
        )
    if not attributes:
        return None
    return Schema(
        id=USER_ATTRIBUTE_URN,
        name="UserAttribute",
        description="The account's typed user attributes",
        attributes=attributes,
    )


@functools.lru_cache(maxsize=128)
def _user_model_for(signature: tuple[tuple[str, str, str], ...]) -> type[Resource[Any]]:
    definitions = [
        AttributeDefinition(name=name, type=type_, description=description) for name, type_, description in signature
    ]
    schema = attribute_schema(definitions)
    if schema is None:
        return User[EnterpriseUser]
    extension: Any = EnterpriseUser | Extension.from_schema(schema)  # a union built at run time
    return User.__class_getitem__(extension)


@dataclass(frozen=True)
class UserService:
    """What the account's SCIM service is made of: the User model (with its attribute extension) and schemas."""

    user_model: type[Resource[Any]]
    attribute_schema: Schema | None

    @property
    def schemas(self) -> list[Schema]:
        found = [scim2_models.User.to_schema(), EnterpriseUser.to_schema(), ScimGroup.to_schema()]
        return found + ([self.attribute_schema] if self.attribute_schema else [])

    @property
    def resource_types(self) -> list[ResourceType]:
        user_type = ResourceType.from_resource(self.user_model)
        return [user_type, ResourceType.from_resource(ScimGroup)]


def user_service(definitions: Iterable[AttributeDefinition]) -> UserService:
    """The SCIM service of an account with these tenant-wide attribute definitions (models are built once for
    each set of definitions, in a bounded cache)."""
    signature = tuple(sorted((d.name, d.type, d.description or d.display_name or d.name) for d in definitions))
    scoped = [AttributeDefinition(name=n, type=t, description=d) for n, t, d in signature]
    return UserService(user_model=_user_model_for(signature), attribute_schema=attribute_schema(scoped))


# Every SCIM request needs the account's service; building it reads and turns every tenant-wide definition into a
# schema attribute (seconds at 10,000 definitions, docs/benchmarks.md), so the process remembers it under the
# account's catalog version, which every change to a definition moves on.
_REMEMBERED_SERVICES: ProcessMemory[UserService] = ProcessMemory(max_entries=256)


def user_service_of(*, account: Account) -> UserService:
    """The account's SCIM service, built from its tenant-wide attribute definitions as they are now."""
    version = directory_selectors.catalog_version(account.pk).current()
    service = _REMEMBERED_SERVICES.remembered(
        account.pk,
        version,
        lambda: user_service(directory_selectors.attribute_definitions_of(account=account, embed_tenant=None)),
    )
    assert service is not None  # user_service always gives one
    return service


# --- users --------------------------------------------------------------------------------------------------


def user_payload(
    *,
    user: DjangoUser,
    profile: InternalUserProfile,
    groups: Iterable[Group],
    attribute_values: dict[str, Any],
    base: str,
) -> dict[str, Any]:
    """The SCIM payload of an internal user (validated by the caller against the account's User model)."""
    data: dict[str, Any] = {k: v for k, v in profile.resource.items() if k not in _NOT_STORED}
    data["schemas"] = [str(User.__schema__)]
    data["id"] = str(user.pk)
    data["userName"] = user.username
    if not (profile.resource.get(ACTIVE_UNSET) and not user.is_active):
        data["active"] = user.is_active
    if profile.external_id:
        data["externalId"] = profile.external_id
    if profile.display_name:
        data["displayName"] = profile.display_name
    name = dict(data.get("name") or {})
    for key, value in (("givenName", user.first_name), ("familyName", user.last_name)):
        if value:
            name[key] = value
        else:
            name.pop(key, None)
    if name:
        data["name"] = name
    else:
        data.pop("name", None)
    if user.email and not any(e.get("value") == user.email for e in data.get("emails") or []):
        data["emails"] = [{"value": user.email, "primary": True}, *(data.get("emails") or [])]
    groups = list(groups)
    if groups:
        data["groups"] = [
            {"value": str(g.pk), "display": g.name, "$ref": f"{base}/Groups/{g.pk}", "type": "direct"} for g in groups
        ]
    if attribute_values:
        data[USER_ATTRIBUTE_URN] = dict(attribute_values)
    data["meta"] = {
        "resourceType": "User",
        "created": iso_time(user.date_joined),
        "lastModified": iso_time(max(profile.updated_at, user.date_joined)),
        "location": f"{base}/Users/{user.pk}",
    }
    return data


def normalized_user_body(body: Any) -> Any:
    """A user body with ``urn:cube:params:1.0:UserAttribute:<name>`` keys (Entra's custom attribute mapping,
    reference 3.1) folded into the extension object scim2-models reads."""
    if not isinstance(body, dict):
        return body
    prefix = USER_ATTRIBUTE_URN.casefold() + ":"
    flat = {k: v for k, v in body.items() if isinstance(k, str) and k.casefold().startswith(prefix)}
    if not flat:
        return body
    folded = {k: v for k, v in body.items() if k not in flat}
    extension = dict(folded.get(USER_ATTRIBUTE_URN) or {})
    for key, value in flat.items():
        extension[key[len(prefix) :]] = value
    folded[USER_ATTRIBUTE_URN] = extension
    schemas = list(folded.get("schemas") or [])
    if USER_ATTRIBUTE_URN not in schemas:
        folded["schemas"] = [*schemas, USER_ATTRIBUTE_URN]
    return folded


@dataclass(frozen=True)
class UserWrite:
    """What a validated SCIM user resource writes: the user's fields and its attribute values."""

    changes: InternalUserChanges
    attribute_values: dict[str, Any]


def user_write(resource: Resource[Any], *, keep_active: bool | None, active_removed: bool = False) -> UserWrite:
    """The write a validated User resource stands for. ``active`` left out keeps ``keep_active`` (a PUT that
    omits it does not suspend the user: reference 3.3), unless a PATCH removed it (``active_removed``): the user
    is then inactive, fail-closed, and shown without ``active``."""
    dumped = resource.model_dump(scim_ctx=Context.DEFAULT)
    extension = dumped.pop(USER_ATTRIBUTE_URN, None) or {}
    stored = {k: v for k, v in dumped.items() if k not in _NOT_STORED}
    name = stored.get("name") or {}
    emails = stored.get("emails") or []
    primary = next((e for e in emails if e.get("primary")), emails[0] if emails else {})
    active = dumped.get("active")
    if active is None and active_removed:
        stored[ACTIVE_UNSET] = True
        keep_active = False
    return UserWrite(
        changes=InternalUserChanges(
            username=dumped.get("userName"),
            email=str(primary.get("value") or ""),
            first_name=str(name.get("givenName") or ""),
            last_name=str(name.get("familyName") or ""),
            is_active=keep_active if active is None else bool(active),
            external_id=str(dumped.get("externalId") or ""),
            display_name=str(dumped.get("displayName") or ""),
            resource=stored,
        ),
        attribute_values={k: v for k, v in extension.items() if k != "schemas" and v is not None},
    )


# --- groups -------------------------------------------------------------------------------------------------


def group_payload(*, group: Group, members: Iterable[DjangoUser], base: str) -> dict[str, Any]:
    """The SCIM payload of a tenant-wide group; its members are internal users."""
    data: dict[str, Any] = {
        "schemas": [str(ScimGroup.__schema__)],
        "id": str(group.pk),
        "displayName": group.name,
        "members": [
            {
                "value": str(u.pk),
                "display": group.member_displays.get(str(u.pk)) or u.username,
                "type": "User",
                "$ref": f"{base}/Users/{u.pk}",
            }
            for u in members
        ],
        "meta": {
            "resourceType": "Group",
            "created": iso_time(group.created_at),
            "lastModified": iso_time(group.updated_at),
            "location": f"{base}/Groups/{group.pk}",
        },
    }
    if group.external_id:
        data["externalId"] = group.external_id
    return data
