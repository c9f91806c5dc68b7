"""The edge kit: what every HTTP door does the same way before and after it calls a service.

- :mod:`.authorization`: the credential of a request header, by the one table of schemes;
- :mod:`.bodies`: a JSON object body, with unknown-field refusal and the size and depth limits;
- :mod:`.ids`: a row id written as text (and the ``<id:...>`` path converter);
- :mod:`.times`: a moment as every API writes it;
- :mod:`.cors`: the cross-origin answers of the Core Data API;
- :mod:`.declarations`: what a plain Django view declares beside its code (its audit, its OpenAPI operations).

The error envelope is :mod:`embedadmin.core.errors` (``ApiError``, ``json_error``). DRF views get the same rules through
DRF's hooks (``accounts.authentication``, ``core.parsers``); plain Django views call these functions directly.
"""
