"""DATABASE_URL is translated into Django's database settings, PostgreSQL options included."""

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from embedadmin.envconfig import database_from_url


def test_postgresql_binds_on_the_server_and_prepares_repeated_statements_by_default():
    config = database_from_url("postgresql://u:p%40ss@db.internal:6543/shop", base_dir=Path("/srv"))

    assert (config["NAME"], config["USER"], config["PASSWORD"], config["HOST"], config["PORT"]) == (
        "shop",
        "u",
        "p@ss",
        "db.internal",
        "6543",
    )
    assert config["OPTIONS"]["server_side_binding"] is True
    assert config["OPTIONS"]["prepare_threshold"] == 2
    assert config["OPTIONS"]["pool"]["max_size"] == 20


@pytest.mark.parametrize(
    ("query", "binding", "threshold"),
    [
        ("prepare_threshold=none", True, None),
        ("prepare_threshold=0", True, 0),
        ("server_side_binding=false", False, None),
        ("server_side_binding=off&prepare_threshold=5", False, None),
    ],
)
def test_a_pooler_without_prepared_statements_can_turn_them_off(query, binding, threshold):
    config = database_from_url(f"postgresql://u:p@h/db?{query}&pool_max_size=7", base_dir=Path("/srv"))

    assert config["OPTIONS"]["server_side_binding"] is binding
    assert config["OPTIONS"]["prepare_threshold"] == threshold
    assert config["OPTIONS"]["pool"]["max_size"] == 7
    assert "pool_max_size" not in config["OPTIONS"]


def test_a_url_without_a_database_name_is_refused():
    with pytest.raises(ImproperlyConfigured, match="names no database"):
        database_from_url("postgresql://u:p@h/", base_dir=Path("/srv"))


def test_a_bad_prepare_threshold_names_the_option():
    with pytest.raises(ImproperlyConfigured, match="prepare_threshold='soon'"):
        database_from_url("postgresql://u:p@h/db?prepare_threshold=soon", base_dir=Path("/srv"))


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("postgresql://u:p@%2Fvar%2Frun%2Fpostgresql/app", "/var/run/postgresql", ""),
        ("postgresql://u:p@%2FSockets%2FPG:5433/app", "/Sockets/PG", "5433"),
        ("postgresql://u:p@DB.Example.com:5432/app", "DB.Example.com", "5432"),
        ("postgresql://u:p@[::1]:5432/app", "::1", "5432"),
        ("postgresql://u:p@[fe80::1%25eth0]/app", "fe80::1%eth0", ""),
        ("postgresql://u:p%40x:y@db:5433/app", "db", "5433"),
        ("postgresql://db/app", "db", ""),
    ],
)
def test_the_host_may_be_a_name_an_address_or_a_unix_socket_directory(url, host, port):
    config = database_from_url(url, base_dir=Path("/srv"))
    assert (config["HOST"], config["PORT"]) == (host, port)
