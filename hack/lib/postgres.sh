# shellcheck shell=bash
# PostgreSQL for the stack (DESIGN §7): Debian's `postgresql` package, a cluster of the stack's
# own (initdb once) listening on 127.0.0.1:25432 only, with no Unix socket, password (SCRAM)
# logins and a database `berth`. The observation store's tests use it through
# BERTH_TEST_POSTGRES_URL; Berth's processes stay on SQLite unless given --observation-store.
# Source after common.sh, from hack/stack.sh (it uses its LOGS and port_in_use). Every function
# is a no-op when its work is done.
#
#   up_postgres        install the package, initdb once, (re)write the config, start the server
#   wait_postgres      wait until it accepts connections, then create the database once
#   down_postgres      stop it (fast shutdown: open sessions are ended)
#   postgres_ready     true when it accepts connections
#   postgres_pid       the server's pid, or nothing
#   postgres_env       export lines (hack/stack.sh env)
#   reconfigure_postgres  rewrite the config for the node mode; restart when it changed
#
# PostgreSQL refuses to run as root. Run as root, the server runs as Debian's `postgres` user,
# which cannot enter a data directory under /root (mode 0700): the cluster then lives in
# /var/lib/postgresql/berth-stack, and $BERTH_STACK_DIR/postgres links to it. The password
# lives in $BERTH_STACK_DIR/postgres.env (mode 600).

BERTH_POSTGRES_PORT=${BERTH_POSTGRES_PORT:-25432}
BERTH_POSTGRES_USER=berth
BERTH_POSTGRES_DB=berth
BERTH_POSTGRES_ENV=$BERTH_STACK_DIR/postgres.env
BERTH_POSTGRES_LINK=$BERTH_STACK_DIR/postgres
# The authority that issued the server's certificate (for sslmode=verify-full).
BERTH_POSTGRES_CA=$BERTH_STACK_DIR/postgres-ca.crt

# _pg_bin — the newest installed server's bin directory (Debian keeps them versioned).
_pg_bin() {
  local dirs=(/usr/lib/postgresql/*/bin)
  [[ -x "${dirs[0]}/postgres" ]] || return 1
  printf '%s\n' "${dirs[@]}" | sort -V | tail -n1
}

# _pg_owner CMD... — run CMD as the user the server runs as (from /: the caller's directory,
# e.g. a checkout under /root, is not the postgres user's to enter).
_pg_owner() {
  if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# _pg_home — the cluster's directory: data/, the server log and the generated configuration.
_pg_home() {
  if ((EUID != 0)) || runuser -u postgres -- test -x "$BERTH_STACK_DIR"; then
    echo "$BERTH_STACK_DIR/postgres"
  else
    echo /var/lib/postgresql/berth-stack
  fi
}

_pg_data() { echo "$(_pg_home)/data"; }

postgres_ready() {
  local bin
  bin=$(_pg_bin) || return 1
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$BERTH_POSTGRES_PORT" -t 2
}

# The pid in postmaster.pid, if that process is a PostgreSQL server: a file left by a crash
# may name a pid reused since.
postgres_pid() {
  local pid
  read -r pid 2>/dev/null <"$(_pg_data)/postmaster.pid" || return 0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */bin/postgres ]]; then echo "$pid"; fi
}

_postgres_credentials() {
  if [[ ! -s "$BERTH_POSTGRES_ENV" ]]; then
    log "postgres: generating credentials in $BERTH_POSTGRES_ENV"
    (umask 077 && echo "BERTH_POSTGRES_PASSWORD=$(openssl rand -hex 16)" >"$BERTH_POSTGRES_ENV")
  fi
  chmod 600 "$BERTH_POSTGRES_ENV"
  # shellcheck disable=SC1090 # generated above
  source "$BERTH_POSTGRES_ENV"
}

# _postgres_init BIN HOME — initdb once, with the superuser `berth` and its password.
_postgres_init() {
  local bin=$1 home=$2 pwfile
  [[ -f "$home/data/PG_VERSION" ]] && return 0
  log "postgres: creating the cluster in $home/data (once)"
  mkdir -p "$home/data"
  chmod 700 "$home" "$home/data"
  if ((EUID == 0)); then chown -R postgres:postgres "$home"; fi
  pwfile=$home/.initdb-password
  (umask 077 && echo "$BERTH_POSTGRES_PASSWORD" >"$pwfile")
  if ((EUID == 0)); then chown postgres:postgres "$pwfile"; fi
  _pg_owner "$bin/initdb" -D "$home/data" -U "$BERTH_POSTGRES_USER" --pwfile="$pwfile" \
    --auth=scram-sha-256 -E UTF8 --no-locale >"$home/initdb.log" 2>&1 || {
    rm -f "$pwfile"
    die "postgres: initdb failed (see $home/initdb.log)"
  }
  rm -f "$pwfile"
  echo "include 'berth-stack.conf'" | _pg_owner tee -a "$home/data/postgresql.conf" >/dev/null
}

# _postgres_tls HOME — the server's TLS files in HOME/tls: an authority of the stack's own,
# made once (its certificate copied to $BERTH_POSTGRES_CA for clients), and a certificate it
# issued for 127.0.0.1 and the node's address (its pods verify the server with
# sslmode=verify-full), issued again when it lacks one of them. Plain connections stay
# allowed: TLS is offered, not required.
_postgres_tls() {
  local dir=$1/tls
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
  mkdir -p "$dir"
  if [[ ! -s "$dir/ca.crt" || ! -s "$dir/ca.key" ]]; then
    log "postgres: making its TLS authority (once)"
    openssl req -x509 "${ec[@]}" -days 3650 -subj "/CN=berth stack PostgreSQL authority" \
      -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
    rm -f "$dir/server.crt"
  fi
  if ! _postgres_names_ok "$dir/server.crt"; then
    log "postgres: issuing its TLS certificate for 127.0.0.1 and $NODE_IP"
    openssl req "${ec[@]}" -subj "/CN=127.0.0.1" -keyout "$dir/server.key" \
      -out "$dir/server.csr" 2>/dev/null
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 3650 -out "$dir/server.crt" -extfile <(
        printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:$NODE_IP" "basicConstraints=CA:FALSE" \
          "keyUsage=digitalSignature" "extendedKeyUsage=serverAuth"
      ) 2>/dev/null
    rm -f "$dir/server.csr"
  fi
  chmod 600 "$dir/ca.key" "$dir/server.key"
  if ((EUID == 0)); then chown -R postgres:postgres "$dir"; fi
  cmp -s "$dir/ca.crt" "$BERTH_POSTGRES_CA" || cp "$dir/ca.crt" "$BERTH_POSTGRES_CA"
}

# _postgres_names_ok CERT — true when CERT names both addresses clients use.
_postgres_names_ok() {
  local names
  names=$(openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null) || return 1
  [[ $names == *"IP Address:127.0.0.1"* && $names == *"IP Address:$NODE_IP"* ]]
}

# _postgres_config DATA — loopback only, no Unix socket (the port alone names the server),
# password logins from 127.0.0.1 only; with the stack's node up (hack/lib/node.sh), also on the
# node address for its pods. Rewritten when it changes; applied at the next start.
_postgres_config() {
  local data=$1 listen=127.0.0.1 pods="" tls
  tls=$(_pg_home)/tls
  if node_mode; then
    listen+=",$NODE_IP"
    pods="host all all $NODE_POD_CIDR scram-sha-256"
  fi
  _pg_owner tee "$data/berth-stack.conf.new" >/dev/null <<EOF
# Generated by hack/stack.sh.
listen_addresses = '$listen'
port = $BERTH_POSTGRES_PORT
unix_socket_directories = ''
max_connections = 200
ssl = on
ssl_cert_file = '$tls/server.crt'
ssl_key_file = '$tls/server.key'
EOF
  _pg_owner tee "$data/pg_hba.conf.new" >/dev/null <<EOF
# Generated by hack/stack.sh: password (SCRAM) logins over IPv4 loopback (and the node's pods).
host all all 127.0.0.1/32 scram-sha-256
$pods
EOF
  local name
  for name in berth-stack.conf pg_hba.conf; do
    if cmp -s "$data/$name.new" "$data/$name"; then
      rm -f "$data/$name.new"
    else
      mv "$data/$name.new" "$data/$name"
    fi
  done
}

up_postgres() {
  ensure_packages runuser:util-linux openssl:openssl
  _pg_bin >/dev/null || ensure_packages pg_isready:postgresql
  local bin home
  bin=$(_pg_bin) || die "postgres: no server under /usr/lib/postgresql after installing it"
  home=$(_pg_home)
  if [[ ! -s "$BERTH_POSTGRES_ENV" && -f "$home/data/PG_VERSION" ]]; then
    # A cluster whose password went with an earlier $BERTH_STACK_DIR: nobody can log in to it.
    log "postgres: the cluster in $home outlived its credentials; creating it anew"
    if [[ -n "$(postgres_pid)" ]]; then
      _pg_owner "$bin/pg_ctl" -D "$home/data" -m fast -w -t 40 stop >/dev/null
    fi
    rm -rf "$home/data"
  fi
  _postgres_credentials
  if [[ "$home" != "$BERTH_POSTGRES_LINK" ]]; then ln -sfn "$home" "$BERTH_POSTGRES_LINK"; fi
  if [[ -n "$(postgres_pid)" ]]; then
    log "postgres: running"
    # A server started by an older checkout: the configuration it lacks (TLS) applies now.
    reconfigure_postgres
    return 0
  fi
  if port_in_use "$BERTH_POSTGRES_PORT"; then
    die "postgres: port $BERTH_POSTGRES_PORT on loopback is already in use by another process"
  fi
  _postgres_init "$bin" "$home"
  _postgres_tls "$home"
  _postgres_config "$home/data"
  log "postgres: starting on 127.0.0.1:$BERTH_POSTGRES_PORT"
  ln -sfn "$home/postgres.log" "$LOGS/postgres.log"
  # pg_ctl detaches the server into a session of its own; -W: wait_postgres does the waiting.
  _pg_owner "$bin/pg_ctl" -D "$home/data" -l "$home/postgres.log" -W start >/dev/null
}

wait_postgres() {
  wait_for 60 "postgres on 127.0.0.1:$BERTH_POSTGRES_PORT (log: $LOGS/postgres.log)" postgres_ready
  local bin
  bin=$(_pg_bin)
  # shellcheck disable=SC1090
  source "$BERTH_POSTGRES_ENV"
  local psql=("$bin/psql" -h 127.0.0.1 -p "$BERTH_POSTGRES_PORT" -U "$BERTH_POSTGRES_USER"
    -d postgres -X -q -t -A -v ON_ERROR_STOP=1)
  if [[ "$(PGPASSWORD=$BERTH_POSTGRES_PASSWORD "${psql[@]}" -c \
    "SELECT 1 FROM pg_database WHERE datname = '$BERTH_POSTGRES_DB'")" != 1 ]]; then
    log "postgres: creating database $BERTH_POSTGRES_DB"
    PGPASSWORD=$BERTH_POSTGRES_PASSWORD "${psql[@]}" -c "CREATE DATABASE $BERTH_POSTGRES_DB"
  fi
}

down_postgres() {
  local bin
  if [[ -z "$(postgres_pid)" ]]; then
    log "postgres: not running"
    return 0
  fi
  bin=$(_pg_bin)
  log "postgres: stopping"
  _pg_owner "$bin/pg_ctl" -D "$(_pg_data)" -m fast -w -t 40 stop >/dev/null
}

postgres_env() {
  [[ -r "$BERTH_POSTGRES_ENV" ]] || return 0
  local BERTH_POSTGRES_PASSWORD
  # shellcheck disable=SC1090
  source "$BERTH_POSTGRES_ENV"
  local url="postgres://$BERTH_POSTGRES_USER:$BERTH_POSTGRES_PASSWORD@127.0.0.1:$BERTH_POSTGRES_PORT/$BERTH_POSTGRES_DB"
  echo "export BERTH_TEST_POSTGRES_URL=$(printf %q "$url")"
  echo "export BERTH_TEST_POSTGRES_CA=$(printf %q "$BERTH_POSTGRES_CA")"
}

# Listening addresses and TLS files are read at start only, so a change of node mode (or a
# server configured by an older checkout) restarts the server.
reconfigure_postgres() {
  local bin data before
  bin=$(_pg_bin) || return 0
  data=$(_pg_data)
  local read=("$data/berth-stack.conf" "$data/pg_hba.conf" "$(_pg_home)/tls/server.crt")
  before=$(_pg_owner cat "${read[@]}" 2>/dev/null | sha256sum)
  _postgres_tls "$(_pg_home)"
  _postgres_config "$data"
  [[ "$(_pg_owner cat "${read[@]}" | sha256sum)" != "$before" ]] || return 0
  [[ -n "$(postgres_pid)" ]] || return 0
  log "postgres: restarting for its new configuration (listening addresses, TLS certificate)"
  _pg_owner "$bin/pg_ctl" -D "$data" -m fast -w -t 40 restart -l "$(_pg_home)/postgres.log" >/dev/null
  wait_postgres
}
