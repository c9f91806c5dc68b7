"""Django's PostgreSQL backend with a checked connection pool (``ENGINE = "embedadmin.core.postgresql"``)."""
