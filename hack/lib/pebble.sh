# shellcheck shell=bash
# ACME for the stack (DESIGN §5b): Debian's `pebble` (a real ACME server, 2.4) and
# `pebble-challtestsrv` (its DNS), both on loopback. Source after common.sh, from hack/stack.sh
# (it uses its LOGS, PKI and port_in_use). Every function is a no-op when its work is done.
#
#   up_pebble       install the package, write the config and serving certificate, start both
#   wait_pebble     wait for the directory, then save the issuing root CA (new on every start)
#   down_pebble     stop both
#   pebble_ready    true when the ACME directory answers
#   pebble_env      export lines (hack/stack.sh env)
#
# The DNS answers every A query with 127.0.0.1 (where server 1's edge proxy publishes its
# ports); tests point other names elsewhere through its management API
# (POST http://127.0.0.1:8055/add-a {"host":"x.","addresses":["…"]}). Pebble validates HTTP-01
# on port $BERTH_PEBBLE_HTTP_PORT (5002, Pebble's own default: a port no other stack user's edge
# proxy publishes, so tests' servers publish theirs there), and refuses orders
# for names under $BERTH_PEBBLE_BLOCKED_DOMAIN (a CA refusing an order, for tests). Certificates
# live $BERTH_PEBBLE_CERT_VALIDITY seconds, so renewal happens within a test.

BERTH_PEBBLE_PORT=${BERTH_PEBBLE_PORT:-14000}
BERTH_PEBBLE_MANAGEMENT_PORT=${BERTH_PEBBLE_MANAGEMENT_PORT:-15000}
BERTH_CHALLTESTSRV_DNS_PORT=${BERTH_CHALLTESTSRV_DNS_PORT:-8053}
BERTH_CHALLTESTSRV_MANAGEMENT_PORT=${BERTH_CHALLTESTSRV_MANAGEMENT_PORT:-8055}
BERTH_PEBBLE_HTTP_PORT=${BERTH_PEBBLE_HTTP_PORT:-5002}
BERTH_PEBBLE_CERT_VALIDITY=${BERTH_PEBBLE_CERT_VALIDITY:-120}
BERTH_PEBBLE_BLOCKED_DOMAIN=${BERTH_PEBBLE_BLOCKED_DOMAIN:-refused.berth.test}
BERTH_PEBBLE_DIR=$BERTH_STACK_DIR/pebble

pebble_ready() {
  curl -fs --max-time 2 --cacert "$PKI/ca.crt" \
    "https://127.0.0.1:$BERTH_PEBBLE_PORT/dir" >/dev/null
}

challtestsrv_ready() { port_in_use "$BERTH_CHALLTESTSRV_MANAGEMENT_PORT"; }

# Pebble's own HTTPS (the directory) uses a certificate from the stack's CA, so clients trust
# the directory with $PKI/ca.crt; the certificates it issues chain to a root it makes anew on
# every start (saved by wait_pebble).
_pebble_files() {
  mkdir -p "$BERTH_PEBBLE_DIR"
  if [[ ! -f "$BERTH_PEBBLE_DIR/wfe.crt" ]]; then
    log "pebble: generating its serving certificate"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=pebble" \
      -keyout "$BERTH_PEBBLE_DIR/wfe.key" -out "$BERTH_PEBBLE_DIR/wfe.csr" 2>/dev/null
    openssl x509 -req -in "$BERTH_PEBBLE_DIR/wfe.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
      -CAcreateserial -days 3650 -out "$BERTH_PEBBLE_DIR/wfe.crt" -extfile <(
        echo "subjectAltName=IP:127.0.0.1,DNS:localhost"
        echo "extendedKeyUsage=serverAuth"
      ) 2>/dev/null
    rm -f "$BERTH_PEBBLE_DIR/wfe.csr"
  fi
  cat >"$BERTH_PEBBLE_DIR/config.json.new" <<EOF
{
  "pebble": {
    "listenAddress": "127.0.0.1:$BERTH_PEBBLE_PORT",
    "managementListenAddress": "127.0.0.1:$BERTH_PEBBLE_MANAGEMENT_PORT",
    "certificate": "$BERTH_PEBBLE_DIR/wfe.crt",
    "privateKey": "$BERTH_PEBBLE_DIR/wfe.key",
    "httpPort": $BERTH_PEBBLE_HTTP_PORT,
    "tlsPort": 8443,
    "ocspResponderURL": "",
    "externalAccountBindingRequired": false,
    "domainBlocklist": ["$BERTH_PEBBLE_BLOCKED_DOMAIN"],
    "certificateValidityPeriod": $BERTH_PEBBLE_CERT_VALIDITY
  }
}
EOF
  if cmp -s "$BERTH_PEBBLE_DIR/config.json.new" "$BERTH_PEBBLE_DIR/config.json"; then
    rm -f "$BERTH_PEBBLE_DIR/config.json.new"
    return 0
  fi
  mv "$BERTH_PEBBLE_DIR/config.json.new" "$BERTH_PEBBLE_DIR/config.json"
  # Pebble reads its configuration at start only (it keeps no state worth keeping).
  if is_running pebble; then
    log "pebble: configuration changed; restarting it"
    stop_bg pebble 10
  fi
}

up_pebble() {
  ensure_packages pebble:pebble pebble-challtestsrv:pebble
  if ! is_running challtestsrv; then
    local port
    for port in "$BERTH_CHALLTESTSRV_DNS_PORT" "$BERTH_CHALLTESTSRV_MANAGEMENT_PORT"; do
      port_in_use "$port" && die "pebble-challtestsrv: port $port is already in use by another process"
    done
    log "pebble-challtestsrv: starting (DNS 127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT)"
    # Only the DNS and its management API: the HTTP-01 answers come from Berth's edge proxy.
    start_bg challtestsrv "$LOGS/pebble-challtestsrv.log" pebble-challtestsrv \
      -defaultIPv4 127.0.0.1 -defaultIPv6 "" \
      -dns01 "127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT" \
      -management "127.0.0.1:$BERTH_CHALLTESTSRV_MANAGEMENT_PORT" \
      -http01 "" -https01 "" -tlsalpn01 ""
  else
    log "pebble-challtestsrv: running"
  fi
  _pebble_files
  if is_running pebble; then
    log "pebble: running"
    return 0
  fi
  port_in_use "$BERTH_PEBBLE_PORT" && die "pebble: port $BERTH_PEBBLE_PORT is already in use by another process"
  log "pebble: starting on https://127.0.0.1:$BERTH_PEBBLE_PORT/dir (certificates live ${BERTH_PEBBLE_CERT_VALIDITY}s)"
  rm -f "$BERTH_PEBBLE_DIR/root.pem"
  # No artificial validation sleeps, no rejected nonces and no reused authorizations: every
  # order proves its challenge, as fast as the CA can.
  PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 PEBBLE_AUTHZREUSE=0 \
    start_bg pebble "$LOGS/pebble.log" pebble -config "$BERTH_PEBBLE_DIR/config.json" \
    -dnsserver "127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT"
}

wait_pebble() {
  wait_for 30 "pebble-challtestsrv (log: $LOGS/pebble-challtestsrv.log)" challtestsrv_ready
  wait_for 30 "pebble's ACME directory (log: $LOGS/pebble.log)" pebble_ready
  if [[ ! -s "$BERTH_PEBBLE_DIR/root.pem" ]]; then
    curl -fs --max-time 5 --cacert "$PKI/ca.crt" -o "$BERTH_PEBBLE_DIR/root.pem.new" \
      "https://127.0.0.1:$BERTH_PEBBLE_MANAGEMENT_PORT/roots/0" ||
      die "pebble: could not fetch its root certificate"
    mv "$BERTH_PEBBLE_DIR/root.pem.new" "$BERTH_PEBBLE_DIR/root.pem"
  fi
}

down_pebble() {
  local name
  for name in pebble challtestsrv; do
    if is_running "$name"; then
      log "$name: stopping"
      stop_bg "$name" 10
    else
      log "$name: not running"
    fi
  done
}

pebble_env() {
  cat <<EOF
export BERTH_ACME_DIRECTORY_URL=https://127.0.0.1:$BERTH_PEBBLE_PORT/dir
export BERTH_ACME_DIRECTORY_CA=$(printf %q "$PKI/ca.crt")
export BERTH_ACME_ROOT_CA=$(printf %q "$BERTH_PEBBLE_DIR/root.pem")
export BERTH_ACME_DNS=127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT
export BERTH_ACME_DNS_MANAGEMENT_URL=http://127.0.0.1:$BERTH_CHALLTESTSRV_MANAGEMENT_PORT
export BERTH_ACME_REFUSED_DOMAIN=$BERTH_PEBBLE_BLOCKED_DOMAIN
EOF
}
