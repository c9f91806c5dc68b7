"""Forms of the panel that are more than a model's fields. Their model choices are scoped to the
viewer's account by :func:`embedadmin.panel.base.scoped_form` / the views that build them."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AdminUserCreationForm
from django.db.models import QuerySet

from embedadmin.accounts.models import Account, ApiKey, Deployment
from embedadmin.chat.models import Agent

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
