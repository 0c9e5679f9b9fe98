#!/bin/sh
# berth/postgres: the official image's first start, for what Berth uses (hack/lib/images.sh).
# On an empty $PGDATA: initdb with the superuser $POSTGRES_USER (default postgres) and the
# password $POSTGRES_PASSWORD (required), then the database $POSTGRES_DB (default the user's
# name). Password (SCRAM) logins over TCP on 5432, trusted ones on the local socket.
set -e
: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

# `docker run berth/postgres -c setting=value` runs the server with those options.
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  # -p keeps the environment (POSTGRES_*); the server refuses to run as root.
  exec su -p -s /bin/sh -c 'exec "$0" "$@"' -- postgres "$0" "$@"
fi

# Asking for help or the version needs no database.
wants_help() {
  for arg; do
    case $arg in -'?' | --help | --describe-config | -V | --version) return 0 ;; esac
  done
  return 1
}

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ] && ! wants_help "$@"; then
  if [ -z "$POSTGRES_PASSWORD" ]; then
    echo "error: the database is uninitialized and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  : "${POSTGRES_USER:=postgres}"
  : "${POSTGRES_DB:=$POSTGRES_USER}"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  # Debian's servers default to this already; others (berth/postgres:16, from npm) use /tmp.
  echo "unix_socket_directories = '/var/run/postgresql'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    # Single-user mode: no server listens before the database exists.
    printf 'CREATE DATABASE "%s";\n' "$POSTGRES_DB" |
      postgres --single -j -D "$PGDATA" postgres >/dev/null
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
