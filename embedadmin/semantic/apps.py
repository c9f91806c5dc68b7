from django.apps import AppConfig


class SemanticConfig(AppConfig):
    name = "embedadmin.semantic"
    label = "semantic"

    def ready(self) -> None:
        from embedadmin.accounts.services.deployments import rollup_home_check_register
        from embedadmin.semantic.serving.rollup_writers import rollup_home_problem

        # A deployment's rollups are set to live in its data source only if their writer can be made.
        rollup_home_check_register(rollup_home_problem)
