# shellcheck shell=bash
# hack/bench.sh tls: a DomainBinding applied until the first verified HTTPS 200 (curl trusting
# only Pebble's root), against Caddy's own automatic HTTPS obtaining a certificate for a new
# host name from the same Pebble, in the same run. Both sides use the ports Pebble validates
# on (5002 for HTTP-01, 5003 for HTTPS), so they run one after the other, never together.
# Source after common.sh and berth.sh, from hack/bench.sh.

BENCH_TLS_HTTP_PORT=5002
BENCH_TLS_HTTPS_PORT=5003

# bench_tls_https_ok HOST — one HTTPS GET verified against Pebble's root only.
bench_tls_https_ok() {
  curl -fs --max-time 2 -o /dev/null --cacert "$BERTH_ACME_ROOT_CA" \
    --resolve "$1:$BENCH_TLS_HTTPS_PORT:127.0.0.1" "https://$1:$BENCH_TLS_HTTPS_PORT/"
}

# bench_tls_until_ok HOST START — seconds from START (date +%s.%N) until HOST answers.
bench_tls_until_ok() {
  local host=$1 start=$2 deadline=$((SECONDS + 180))
  until bench_tls_https_ok "$host"; do
    ((SECONDS < deadline)) || die "no verified HTTPS 200 from $host within 180 s"
    sleep 0.05
  done
  echo "$(date +%s.%N) - $start" | bc
}

# bench_tls_caddy HOST — Caddy's automatic HTTPS for HOST from Pebble; prints the seconds.
bench_tls_caddy() {
  local host=$1 dir start seconds
  dir=$(mktemp -d)
  cat >"$dir/config.json" <<JSON
{"admin": {"disabled": true}, "apps": {
  "http": {"http_port": $BENCH_TLS_HTTP_PORT, "https_port": $BENCH_TLS_HTTPS_PORT, "servers": {"bench": {
    "listen": [":$BENCH_TLS_HTTPS_PORT"],
    "routes": [{"match": [{"host": ["$host"]}], "handle": [{"handler": "static_response", "body": "ok"}]}]}}},
  "tls": {"automation": {"policies": [{"subjects": ["$host"], "issuers": [{"module": "acme",
    "ca": "$BERTH_ACME_DIRECTORY_URL", "trusted_roots_pem_files": ["/pki/ca.crt"],
    "challenges": {"tls-alpn": {"disabled": true}}}]}]}}}}
JSON
  start=$(date +%s.%N)
  docker run -d --name berth-bench-tls-caddy --network host \
    -v "$dir/config.json:/etc/caddy/config.json:ro" -v "$BERTH_ACME_DIRECTORY_CA:/pki/ca.crt:ro" \
    "$BERTH_EDGE_IMAGE" >/dev/null
  seconds=$(bench_tls_until_ok "$host" "$start")
  docker rm -f berth-bench-tls-caddy >/dev/null
  rm -rf "$dir"
  echo "$seconds"
}

# bench_tls_berth NS HOST — a DomainBinding for HOST to resource `web`; prints the seconds.
bench_tls_berth() {
  local ns=$1 host=$2 name start seconds
  name=b-${host%%.*}
  start=$(date +%s.%N)
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: DomainBinding
metadata: { name: $name }
spec: { resourceId: web, hostname: $host }
YAML
  seconds=$(bench_tls_until_ok "$host" "$start")
  kubectl -n "$ns" wait --for=condition=Ready "domainbinding/$name" --timeout=60s >/dev/null
  kubectl -n "$ns" delete domainbinding "$name" >/dev/null
  echo "$seconds"
}

# True when no container publishes the ports this benchmark needs.
bench_tls_ports_free() {
  ! docker ps --format '{{.Ports}}' | grep -qE ":($BENCH_TLS_HTTP_PORT|$BENCH_TLS_HTTPS_PORT)->"
}

bench_tls_median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

bench_tls() {
  local runs=${1:-3} ns="bench-tls-$RANDOM" i caddy=() berth=()
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  ensure_packages bc:bc
  log "building Berth"
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-controller)
  berth_install_crds
  berth_install_rbac
  # The Resource, then the Server (it waits for its resources), while the controller still runs,
  # so their finalizers remove the app and the edge proxy.
  local cleanup="docker rm -f berth-bench-tls-caddy >/dev/null 2>&1 || true"
  cleanup="$cleanup; kubectl -n $ns delete resource.berth.dev web --timeout=60s >/dev/null 2>&1 || true"
  cleanup="$cleanup; kubectl -n $ns delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true"
  cleanup="$cleanup; kubectl delete namespace $ns --wait=false >/dev/null 2>&1 || true"
  if ! controller_leading; then
    berth_start_controller "$BERTH_RUN_DIR/bench-controller.log"
    cleanup="$cleanup; berth_stop_controller"
  fi
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "$cleanup" EXIT
  # An earlier run's proxy may still be going away (the controller removes it).
  wait_for 120 "ports $BENCH_TLS_HTTP_PORT/$BENCH_TLS_HTTPS_PORT free of containers" bench_tls_ports_free

  log "Caddy's automatic HTTPS from Pebble, $runs runs"
  for ((i = 0; i < runs; i++)); do
    caddy+=("$(bench_tls_caddy "caddy-$i-$RANDOM.berth.test")")
    log "  caddy run $i: ${caddy[-1]} s"
  done

  log "Berth: server, app, then a DomainBinding per run"
  bench_local_server "$ns" "$BENCH_TLS_HTTP_PORT" "$BENCH_TLS_HTTPS_PORT"
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: web }
spec:
  projectId: prj-bench
  environmentId: env-bench
  serverId: local
  name: web
  kind: application
  source: { kind: docker-image, locator: "$BERTH_SAMPLE_IMAGE" }
  networkProfile: { internalPort: 8080 }
  autoDeploy: { enabled: true }
YAML
  kubectl -n "$ns" wait --for=condition=Ready resource/web --timeout=120s >/dev/null
  for ((i = 0; i < runs; i++)); do
    berth+=("$(bench_tls_berth "$ns" "berth-$i-$RANDOM.berth.test")")
    log "  berth run $i: ${berth[-1]} s"
  done

  local caddy_p50 berth_p50 ratio
  caddy_p50=$(bench_tls_median "${caddy[@]}")
  berth_p50=$(bench_tls_median "${berth[@]}")
  ratio=$(echo "scale=2; $berth_p50 / $caddy_p50" | bc)
  echo "binding applied -> first verified HTTPS 200 (p50 of $runs): berth ${berth_p50}s, caddy automatic HTTPS ${caddy_p50}s, ratio ${ratio}x (goal <= 1.5x)"
  (($(echo "$ratio <= 1.5" | bc))) || die "berth is ${ratio}x caddy's automatic HTTPS"
}
