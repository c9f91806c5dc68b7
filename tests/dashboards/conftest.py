from tests.dashboards.support import fresh_models, globex_modelled, modelled  # noqa: F401
