#!/usr/bin/env bash
# Brings up what the test suite needs on this machine: PostgreSQL (a role and database for the tests),
# Redis, and Chromium for browser tests. Installs them from apt when missing and we are root.
# Idempotent: does nothing for what is already running. Prints the environment to export.
set -euo pipefail

PGUSER_NAME=${PGUSER_NAME:-embedadmin}
PGPASS=${PGPASS:-embedadmin}
PGDB=${PGDB:-embedadmin}

log() { printf '[test-services] %s\n' "$*" >&2; }

apt_install() {
  if [ "$(id -u)" != 0 ]; then log "not root: cannot install $*"; return 1; fi
  if [ -z "${_APT_UPDATED:-}" ]; then DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2; _APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# PostgreSQL
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt_install postgresql
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$version" ]; then log "no PostgreSQL cluster found"; exit 1; fi
  pg_ctlcluster "$version" main start >&2 || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL did not start"; exit 1; }

as_postgres() { if [ "$(id -u)" = 0 ]; then su postgres -c "$1"; else sh -c "$1"; fi; }
if ! as_postgres "psql -tAc \"SELECT 1 FROM pg_roles WHERE rolname='$PGUSER_NAME'\"" | grep -q 1; then
  as_postgres "psql -qc \"CREATE ROLE $PGUSER_NAME LOGIN CREATEDB PASSWORD '$PGPASS'\"" >&2
fi
if ! as_postgres "psql -tAc \"SELECT 1 FROM pg_database WHERE datname='$PGDB'\"" | grep -q 1; then
  as_postgres "createdb -O $PGUSER_NAME $PGDB" >&2
fi

# Redis
if ! command -v redis-server >/dev/null 2>&1; then
  apt_install redis-server
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no >&2
  for _ in $(seq 1 20); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.25; done
fi

# MariaDB for the mysql:// data source tests: its own data directory and port (3307) on loopback, a test user
# that may create databases named embedadmin_*, and the time zone tables loaded (CONVERT_TZ with a named zone,
# such as 'Europe/Berlin', needs them; mariadb-tzinfo-to-sql reads the system's zoneinfo).
MYSQL_PORT=${MYSQL_PORT:-3307}
MYSQL_DIR=${MYSQL_DIR:-/var/lib/embedadmin-test-mariadb}
MYSQL_SOCKET=$MYSQL_DIR/mysqld.sock
if ! command -v mariadbd >/dev/null 2>&1; then
  apt_install mariadb-server
fi
as_maria() { mariadb --socket="$MYSQL_SOCKET" -u root "$@"; }
if ! mariadb-admin --socket="$MYSQL_SOCKET" -u root ping >/dev/null 2>&1; then
  if [ ! -d "$MYSQL_DIR/data/mysql" ]; then
    mkdir -p "$MYSQL_DIR"
    if [ "$(id -u)" = 0 ]; then chown mysql:mysql "$MYSQL_DIR"; fi
    mariadb-install-db --user="$(id -un | sed 's/^root$/mysql/')" --datadir="$MYSQL_DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db >&2
  fi
  setsid mariadbd --no-defaults --user="$(id -un | sed 's/^root$/mysql/')" --datadir="$MYSQL_DIR/data" \
    --socket="$MYSQL_SOCKET" --port="$MYSQL_PORT" --bind-address=127.0.0.1 --pid-file="$MYSQL_DIR/mariadbd.pid" \
    --log-error="$MYSQL_DIR/error.log" --innodb-buffer-pool-size=64M --max-connections=200 \
    </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 60); do mariadb-admin --socket="$MYSQL_SOCKET" -u root ping >/dev/null 2>&1 && break; sleep 0.5; done
fi
mariadb-admin --socket="$MYSQL_SOCKET" -u root ping >/dev/null 2>&1 || { log "MariaDB did not start"; exit 1; }
if [ "$(as_maria -N -e "SELECT COUNT(*) FROM mysql.time_zone_name")" = 0 ]; then
  mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null | as_maria mysql
fi
as_maria -e "CREATE USER IF NOT EXISTS '$PGUSER_NAME'@'127.0.0.1' IDENTIFIED BY '$PGPASS';
  CREATE DATABASE IF NOT EXISTS $PGDB;
  GRANT ALL PRIVILEGES ON \`$PGDB\`.* TO '$PGUSER_NAME'@'127.0.0.1';
  GRANT ALL PRIVILEGES ON \`${PGDB}\\_%\`.* TO '$PGUSER_NAME'@'127.0.0.1';"

# Chromium for Playwright (we never download a browser build).
if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium || log "chromium unavailable: browser tests will fail"
fi

# Node.js and npm for the test that drives the server with Cube's JavaScript client (tests/js).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm || log "node/npm unavailable: tests/semantic/test_cube_js_client.py will fail"
fi

echo "export TEST_DATABASE_URL=postgresql://$PGUSER_NAME:$PGPASS@127.0.0.1:5432/$PGDB"
echo "export TEST_REDIS_URL=redis://127.0.0.1:6379/15"
echo "export TEST_MYSQL_URL=mysql://$PGUSER_NAME:$PGPASS@127.0.0.1:$MYSQL_PORT/$PGDB"
