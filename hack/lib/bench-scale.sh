# shellcheck shell=bash
# hack/bench.sh scale: what idle apps cost. Runs the release berth-controller (as users run it),
# declares Resources of the sample app on the local server, and measures at rest, for 60 s each:
# API requests per minute that berth-controller sent (its berth_kube_api_requests counter,
# WATCH excluded, Lease renewals apart), beside the API server's own total of every client
# (apiserver_request_total), berth-controller's CPU and RSS, and SSH channels opened per minute
# (its berth_ssh_channels_opened counter). Also
# times 200 Resources applied at once until all are Ready, and drift repair: a managed container
# removed by hand until the route answers 200 again. Exits non-zero when a goal is missed.
# Source after common.sh and berth.sh, with the stack's environment exported.

SCALE_NS=bench-scale
SCALE_PORT=18980
SCALE_WINDOW=60

# scale_resources FROM TO [server]: Resources r-FROM..r-TO as YAML, on the server if given.
scale_resources() {
  local from=$1 to=$2 server=${3:-} i
  for ((i = from; i <= to; i++)); do
    cat <<YAML
---
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: r-$i, namespace: $SCALE_NS }
spec:
  projectId: bench
  environmentId: bench
  name: r-$i
  kind: application
  networkProfile: { internalPort: 8080 }
  runtimeProfile: { healthCheck: { path: /healthz, intervalSeconds: 1 } }
YAML
    if [[ -n "$server" ]]; then
      printf '  serverId: %s\n  source: { kind: docker-image, locator: berth/sample-app:1 }\n' "$server"
    fi
  done
}

# Requests the API server has answered so far, WATCH excluded: "total leases".
scale_api_requests() {
  kubectl get --raw /metrics | awk '
    /^apiserver_request_total\{/ && !/verb="WATCH"/ {
      total += $NF
      if ($0 ~ /resource="leases"/) leases += $NF
    }
    END { printf "%d %d\n", total, leases }'
}

# CPU time (clock ticks) berth-controller used so far.
scale_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

scale_rss_mib() { awk '/^VmRSS/ {printf "%.0f\n", $2 / 1024}' "/proc/$1/status"; }

scale_ssh_channels() {
  curl -fs "http://$CONTROLLER_ADDR/metrics" |
    awk '/^berth_ssh_channels_opened_total/ {sum += $NF} END {printf "%d\n", sum}'
}

# Requests berth-controller sent so far, WATCH excluded: "others leases".
scale_own_requests() {
  curl -fs "http://$CONTROLLER_ADDR/metrics" | awk '
    /^berth_kube_api_requests_total/ && !/verb="WATCH"/ {
      if ($0 ~ /lease="true"/) leases += $NF; else others += $NF
    }
    END { printf "%d %d\n", others, leases }'
}

# scale_own_requests_by_source: "<verb> <collection> <count>" per kind of request berth-controller
# sent so far (not watches, not its Lease).
scale_own_requests_by_source() {
  curl -fs "http://$CONTROLLER_ADDR/metrics" | awk '
    /^berth_kube_api_requests_total/ && !/verb="WATCH"/ && !/lease="true"/ {
      verb = $0; sub(/.*verb="/, "", verb); sub(/".*/, "", verb)
      resource = $0; sub(/.*resource="/, "", resource); sub(/".*/, "", resource)
      print verb, resource, $NF
    }' | sort
}

# scale_sources BEFORE AFTER: the kinds of request that grew between two snapshots, one line.
scale_sources() {
  join -j1 -a2 -e 0 -o 0,1.2,2.2 <(awk '{print $1 ":" $2, $3}' <<<"$1" | sort) \
    <(awk '{print $1 ":" $2, $3}' <<<"$2" | sort) |
    awk '$3 > $2 {printf "%s%s +%d", sep, $1, $3 - $2; sep = ", "}'
}

scale_controller_pid() { read -r pid _ <"$BERTH_STACK_DIR/berth-controller.pid" && echo "$pid"; }

# scale_rest LABEL: one measurement window at rest; prints a table row, sets SCALE_* results.
scale_rest() {
  local label=$1 pid r0 r1 o0 o1 l0 l1 c0 c1 s0 s1 hz
  pid=$(scale_controller_pid)
  hz=$(getconf CLK_TCK)
  read -r r0 _ < <(scale_api_requests)
  read -r o0 l0 < <(scale_own_requests)
  local sources_0
  sources_0=$(scale_own_requests_by_source)
  c0=$(scale_cpu_ticks "$pid")
  s0=$(scale_ssh_channels)
  sleep "$SCALE_WINDOW"
  read -r r1 _ < <(scale_api_requests)
  read -r o1 l1 < <(scale_own_requests)
  SCALE_SOURCES=$(scale_sources "$sources_0" "$(scale_own_requests_by_source)")
  c1=$(scale_cpu_ticks "$pid")
  s1=$(scale_ssh_channels)
  SCALE_ALL=$(((r1 - r0) * 60 / SCALE_WINDOW))
  SCALE_REQUESTS=$(((o1 - o0) * 60 / SCALE_WINDOW))
  SCALE_LEASES=$(((l1 - l0) * 60 / SCALE_WINDOW))
  SCALE_CPU=$(awk -v t=$((c1 - c0)) -v hz="$hz" -v w="$SCALE_WINDOW" 'BEGIN {printf "%.2f", 100 * t / hz / w}')
  SCALE_RSS=$(scale_rss_mib "$pid")
  SCALE_SSH=$(((s1 - s0) * 60 / SCALE_WINDOW))
  printf '%-28s %10s %10s %12s %10s %8s %8s\n' "$label" "$SCALE_REQUESTS" "$SCALE_LEASES" \
    "$SCALE_ALL" "$SCALE_CPU" "$SCALE_RSS" "$SCALE_SSH"
  # Whatever berth-controller asked for at rest, named, so a cost is traced to its source.
  [[ -z "$SCALE_SOURCES" ]] || printf '%-28s %s\n' "  (controller requests)" "$SCALE_SOURCES"
}

scale_header() {
  printf '%-28s %10s %10s %12s %10s %8s %8s\n' "at rest, per minute" "ctrl req" "ctrl lease" \
    "all clients" "ctrl CPU%" "RSS MiB" "SSH ch"
}

# Seconds until every Resource in the namespace is Ready (or the limit passes).
scale_wait_ready() {
  local expected=$1 limit=$2 started=$SECONDS ready
  while ((SECONDS - started < limit)); do
    ready=$(kubectl -n "$SCALE_NS" get resources.berth.dev -o json |
      jq '[.items[] | select(.status.conditions // [] | any(.type == "Ready" and .status == "True"))] | length')
    ((ready >= expected)) && { echo $((SECONDS - started)); return 0; }
    sleep 1
  done
  echo "$limit"
  return 1
}

# Milliseconds from removing r-N's container by hand until its route answers 200 again.
scale_drift_ms() {
  local name=r-$1 container started
  container=$(docker ps -q --filter "label=berth.dev/namespace=$SCALE_NS" \
    --filter "label=berth.dev/resource=$name" | head -1)
  [[ -n "$container" ]] || die "no running container for $name"
  started=$(date +%s%3N)
  docker rm -f "$container" >/dev/null
  local deadline=$((started + 60000))
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 \
    --resolve "$name.localhost:$SCALE_PORT:127.0.0.1" "http://$name.localhost:$SCALE_PORT/")" == 200 ]]; do
    (($(date +%s%3N) > deadline)) && { echo 60000; return; }
    sleep 0.02
  done
  echo $(($(date +%s%3N) - started))
}

scale_cleanup() {
  log "cleaning up namespace $SCALE_NS"
  kubectl -n "$SCALE_NS" delete resources.berth.dev --all --wait=false >/dev/null 2>&1 || true
  local deadline=$((SECONDS + 300))
  while ((SECONDS < deadline)) &&
    [[ -n "$(kubectl -n "$SCALE_NS" get resources.berth.dev -o name 2>/dev/null | head -1)" ]]; do
    sleep 2
  done
  kubectl -n "$SCALE_NS" delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$SCALE_NS" --wait=false >/dev/null 2>&1 || true
  # Back to the dev build. fd 9 (the integration lock) must not outlive this run in it.
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller "$BERTH_RUN_DIR/controller.log" 9>&-
}

scale_start_release() {
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/release berth_start_controller \
    "$BERTH_RUN_DIR/bench-controller.log" 9>&-
}

# scale_take_over NS: builds the release berth-controller (and the debug one the cleanup puts
# back), installs CRDs and RBAC, waits until no integration run uses the stack (the lock stays
# held on fd 9 for the rest of the bench), empties NS and starts the release controller in place
# of the running one.
scale_take_over() {
  log "building berth-controller (release, as users run it) and the debug binaries"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-controller --bin berth-controller)
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-controller)
  berth_install_crds
  berth_install_rbac
  # It replaces berth-controller for minutes: not while an integration run uses it.
  exec 9>"$BERTH_STACK_DIR/integration.lock"
  flock 9
  kubectl delete namespace "$1" --wait=true --timeout=300s >/dev/null 2>&1 || true
  scale_start_release
}

bench_scale() {
  local n=${1:-300} declared=${2:-2000} failed=0
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  scale_take_over "$SCALE_NS"
  trap scale_cleanup EXIT
  bench_local_server "$SCALE_NS" "$SCALE_PORT"

  log "10 Resources"
  scale_resources 1 10 local | kubectl apply -f - >/dev/null
  scale_wait_ready 10 180 >/dev/null || die "10 Resources did not become Ready"
  sleep 10
  scale_header
  scale_rest "N=10 Resources served"
  local rest_10=$SCALE_REQUESTS
  local burst=$((n < 210 ? n - 10 : 200)) burst_secs
  log "$burst more Resources applied at once"
  local started=$SECONDS
  scale_resources 11 $((10 + burst)) local | kubectl apply -f - >/dev/null
  burst_secs=$(scale_wait_ready $((10 + burst)) 600) || failed=1
  burst_secs=$((SECONDS - started))
  if ((n > 10 + burst)); then
    log "up to $n Resources"
    scale_resources $((11 + burst)) "$n" local | kubectl apply -f - >/dev/null
    scale_wait_ready "$n" 600 >/dev/null || die "$n Resources did not become Ready"
  fi
  # Everything just became Ready: let the last status writes settle before measuring.
  sleep 10

  log "measuring at rest ($SCALE_WINDOW s)"
  scale_header
  scale_rest "N=$n Resources served"
  local rest_n=$SCALE_REQUESTS leases_n=$SCALE_LEASES cpu_n=$SCALE_CPU rss_n=$SCALE_RSS ssh_n=$SCALE_SSH

  log "drift repair: a container removed by hand until the route answers 200 again (5 runs)"
  local times=() i
  for i in 3 5 7 9 11; do
    times+=("$(scale_drift_ms "$i")")
    sleep 2
  done
  local drift_p50
  drift_p50=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
  echo "drift repair ms: ${times[*]} (p50 $drift_p50)"

  log "declaring Resources without a server up to $declared (control-plane cost only)"
  scale_resources $((n + 1)) "$declared" | kubectl apply -f - >/dev/null
  local deadline=$((SECONDS + 600)) seen=0
  while ((SECONDS < deadline)); do
    seen=$(kubectl -n "$SCALE_NS" get resources.berth.dev -o json |
      jq '[.items[] | select(.status.conditions)] | length')
    ((seen >= declared)) && break
    sleep 3
  done
  sleep 10
  scale_header
  scale_rest "N=$declared Resources declared"
  local rss_declared=$SCALE_RSS rest_declared=$SCALE_REQUESTS

  echo
  echo "Goals (one run, release berth-controller, $(nproc) cores):"
  scale_goal "berth-controller API requests/min at rest, N=10 (<= 60, Lease renewals apart)" \
    "$rest_10" 60 || failed=1
  scale_goal "berth-controller API requests/min at rest, N=$n (<= 60, Lease renewals apart: $leases_n)" \
    "$rest_n" 60 || failed=1
  scale_goal "berth-controller API requests/min at rest, N=$declared (<= 60, Lease renewals apart)" \
    "$rest_declared" 60 || failed=1
  scale_goal "berth-controller CPU % of one core at rest, N=$n (< 2)" "$cpu_n" 2 || failed=1
  scale_goal "berth-controller RSS MiB, N=$n (<= 96)" "$rss_n" 96 || failed=1
  scale_goal "berth-controller RSS MiB, N=$declared declared (<= 96)" "$rss_declared" 96 || failed=1
  scale_goal "seconds until $burst Resources applied at once are Ready (<= 120)" "$burst_secs" 120 || failed=1
  scale_goal "drift repair p50 ms (<= 2000)" "$drift_p50" 2000 || failed=1
  # Health comes by Docker's events over one stream per server, not by probes per Resource.
  scale_goal "SSH channels opened per minute at rest, N=$n (<= 10, whatever N)" "$ssh_n" 10 || failed=1
  return "$failed"
}

# scale_goal TEXT VALUE LIMIT: prints the figure and whether it is within the limit.
scale_goal() {
  local verdict=ok
  awk -v v="$2" -v l="$3" 'BEGIN {exit !(v <= l)}' || verdict=MISSED
  printf '  %-88s %8s  %s\n' "$1" "$2" "$verdict"
  [[ "$verdict" == ok ]]
}
