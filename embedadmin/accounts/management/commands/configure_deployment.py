from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from embedadmin.accounts import services
from embedadmin.accounts.management.commands._output import emit, fail
from embedadmin.accounts.models import Deployment
from embedadmin.accounts.selectors import data_source_url_redacted, deployment_data_source_url
from embedadmin.core.errors import ApiError


class Command(BaseCommand):
    help = (
        "Set a deployment's data model directory, data source URL, chat token authentication and whether it loads "
        "what compiles of its model."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("deployment_id", type=int)
        parser.add_argument("--model-dir", help="directory of Cube-format YAML files (cubes/, views/)")
        parser.add_argument("--data-source", help="duckdb:///path/file.duckdb or postgresql://user:pw@host/db")
        parser.add_argument("--chat-token-auth", choices=["on", "off"], help="accept X-Service-Auth-Token for chat")
        parser.add_argument(
            "--load-what-compiles",
            choices=["on", "off"],
            help="serve the cubes and views that compile, list the others (off: any fault refuses the model)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options) -> None:
        deployment = Deployment.objects.filter(pk=options["deployment_id"]).first()
        if deployment is None:
            raise CommandError(f"Deployment {options['deployment_id']} not found")
        token_auth = options["chat_token_auth"]
        partial = options["load_what_compiles"]
        try:
            deployment = services.deployment_configure(
                deployment=deployment,
                model_dir=options["model_dir"],
                data_source_url=options["data_source"],
                chat_token_auth=None if token_auth is None else token_auth == "on",
                load_partial_model=None if partial is None else partial == "on",
            )
        except ApiError as exc:
            raise fail(exc) from None
        emit(
            self,
            {
                "deploymentId": deployment.pk,
                "modelDir": deployment.model_dir,
                "dataSource": data_source_url_redacted(deployment_data_source_url(deployment=deployment)),
                "chatTokenAuth": deployment.chat_token_auth,
                "loadWhatCompiles": deployment.load_partial_model,
            },
            as_json=options["json"],
        )
