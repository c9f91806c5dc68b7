"""Make the demo account ready to embed: what the sample host app (demo/host_app.py) relies on."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from embedadmin.accounts import services as accounts
from embedadmin.accounts.models import Account
from embedadmin.core.errors import ApiError
from embedadmin.directory import selectors as directory_selectors
from embedadmin.directory import services as directory

# The host app's embed tenants: regional viewers of one country each, so one dashboard shows each of
# them different rows (the `sales` view's row-level policy on the `country` user attribute).
DEMO_EMBED_TENANTS = ("northwind-traders", "contoso-shops")


class Command(BaseCommand):
    help = (
        "Give the demo account the tenant-wide group and attribute its access policies use, the sample host "
        "app's embed tenants, and the host app's origin among the origins allowed to frame embeds. Idempotent: "
        "a second run writes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--account", default="demo")
        parser.add_argument("--host-origin", action="append", default=[], help="an origin allowed to frame embeds")

    def handle(self, *args, **options) -> None:
        account = Account.objects.filter(name=options["account"]).first()
        if account is None:
            raise CommandError(f"no account {options['account']!r}: run bootstrap_demo first")
        try:
            self._catalog(account)
            self._origins(account, options["host_origin"])
        except ApiError as exc:
            raise CommandError(exc.message) from None

    def _catalog(self, account: Account) -> None:
        if not directory_selectors.groups_by_name(account=account, embed_tenant=None, names=["regional"]):
            directory.group_create(account=account, embed_tenant=None, name="regional", description="Sees one country")
        if not directory_selectors.attribute_definitions_of(account=account, embed_tenant=None).filter(name="country"):
            directory.attribute_definition_create(
                account=account,
                embed_tenant=None,
                data=directory.AttributeDefinitionInput(name="country", type="string", display_name="Country"),
            )
        for name in DEMO_EMBED_TENANTS:
            directory.embed_tenant_get_or_create(account=account, name=name)

    def _origins(self, account: Account, wanted: list[str]) -> None:
        current = list(account.tenant_settings.embed_allowed_origins)
        missing = [origin for origin in wanted if origin not in current]
        if missing:
            accounts.tenant_settings_update(account=account, changes={"embedAllowedOrigins": current + missing})
