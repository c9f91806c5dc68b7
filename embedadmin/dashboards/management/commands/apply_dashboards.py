"""``manage.py apply_dashboards [--deployment ID] [--dry-run] [--json]``: apply dashboards as code."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from embedadmin.dashboards import ascode, selectors


class Command(BaseCommand):
    help = (
        "Apply the dashboards files (<model dir>/dashboards/*.yml) of every deployment with a data model, or of one. "
        "Each file applies in its own transaction; applying twice writes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--deployment", type=int, help="only this deployment")
        parser.add_argument("--dry-run", action="store_true", help="check and count the writes, then roll back")
        parser.add_argument("--json", action="store_true", help="print one JSON object per file")

    def handle(self, *args, **options) -> None:
        deployments = selectors.deployments_with_model()
        if options["deployment"] is not None:
            deployments = [d for d in deployments if d.pk == options["deployment"]]
            if not deployments:
                raise CommandError(f"Deployment {options['deployment']} not found or has no data model")
        failed = 0
        for deployment in deployments:
            for outcome in ascode.apply_for_deployment(deployment, dry_run=options["dry_run"]):
                failed += not outcome.ok
                if options["json"]:
                    self.stdout.write(
                        json.dumps(
                            {
                                "deploymentId": outcome.deployment_id,
                                "file": outcome.file,
                                "writes": outcome.writes,
                                "error": outcome.error,
                                "dashboardPublicId": outcome.dashboard_public_id,
                                "dryRun": options["dry_run"],
                            }
                        )
                    )
                elif outcome.ok:
                    what = "unchanged" if outcome.writes == 0 else f"{outcome.writes} writes"
                    if options["dry_run"]:
                        what += " (dry run, rolled back)"
                    published = f", dashboard {outcome.dashboard_public_id}" if outcome.dashboard_public_id else ""
                    self.stdout.write(f"deployment {outcome.deployment_id} {outcome.file}: {what}{published}")
                else:
                    self.stderr.write(f"deployment {outcome.deployment_id} {outcome.file}: {outcome.error}")
        if failed:
            raise CommandError(f"{failed} dashboards file(s) not applied")
