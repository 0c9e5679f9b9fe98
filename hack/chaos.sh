#!/usr/bin/env bash
# The fault suite of issue 11: with kept-alive clients running throughout, every fault is
# injected during a redeploy (berth/sample-app:1 <-> :2) and the system must recover by itself.
#   hack/chaos.sh           every fault (about 5 minutes)
#   hack/chaos.sh --quick   one controller kill and the sshd restart (under 3 minutes; test.sh)
# One row per fault: the phase the attempt was in when the fault was injected, how long the
# fault lasted, time to recover after the fault ended (Resource Ready, its newest
# Deployment succeeded, the route answering the new version), the load's requests answered and
# failed from the redeploy's start until then, the Resource's running containers (goal: 1) and
# its attempts not in a final state (goal: 0). Recovery within 30 s of the fault's end is a goal
# for every fault; no failed request is one for faults that leave the edge proxy running.
# Exits 1 when a goal is missed, 2 on a usage error.
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=chaos
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"

quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  -h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
  *)
    echo "Usage: hack/chaos.sh [--quick]" >&2
    exit 2
    ;;
esac

RECOVERY_GOAL=30     # seconds after the fault ended
RECOVERY_LIMIT=120   # give up waiting after this long
CUT_SECONDS=20       # server 2's network partition
ensure_packages curl:curl jq:jq python3:python3 flock:util-linux

# One suite at a time with the integration tests: both restart berth-controller and daemons of
# the shared stack. hack/test.sh runs this with the lock already held on fd 9 (same open file,
# so flock returns at once); every process started below gets 9>&- so none keeps it.
LOCK=$BERTH_STACK_DIR/integration.lock
mkdir -p "$BERTH_STACK_DIR"
if [[ "$(readlink -f "/proc/$$/fd/9" 2>/dev/null)" != "$(readlink -f "$LOCK")" ]]; then
  exec 9>"$LOCK"
fi
if ! flock -n 9; then
  log "hack/test.sh or another hack/chaos.sh holds $LOCK; waiting (up to 60 min)"
  flock -w 3600 9 || die "the integration lock stayed held for an hour"
fi

"$HACK_DIR/stack.sh" up 9>&- >&2
eval "$("$HACK_DIR/stack.sh" env)"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/berth.sh"
mkdir -p "$BERTH_RUN_DIR"
CONTROLLER_LOG=${BERTH_CONTROLLER_LOG:-$BERTH_RUN_DIR/chaos-controller.log}
D2=(docker -H "unix://$BERTH_SSH2_DOCKER_SOCKET")

NS=chaos-$(date +%s)-$RANDOM
WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-chaos.XXXXXX")
LOAD_OUT=$WORK/load.json
RESULTS=$WORK/results
LOAD_PID=
had_controller=0
srv2_reason=""
: >"$RESULTS"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
k() { kubectl -n "$NS" "$@"; }

# ---- cleanup (also on failure) -----------------------------------------------------------

cleanup() {
  local rc=$? deadline
  trap - EXIT INT TERM
  set +e
  log "cleaning up namespace $NS"
  if [[ -n "$LOAD_PID" ]]; then
    kill -TERM "$LOAD_PID" 2>/dev/null
    wait "$LOAD_PID" 2>/dev/null
  fi
  # Undo a fault an interruption left in place, so Berth can remove what it created.
  "$HACK_DIR/stack.sh" restore-srv2 9>&- >/dev/null 2>&1
  apiserver_ok || "$HACK_DIR/stack.sh" up 9>&- >/dev/null 2>&1
  controller_leading || (berth_start_controller "$CONTROLLER_LOG") 9>&- >/dev/null 2>&1
  if kubectl get namespace "$NS" >/dev/null 2>&1; then
    # Resources first (their containers go), then the Servers (their edge proxies go).
    k delete resources.berth.dev --all --timeout=90s >/dev/null 2>&1
    deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)) && [[ -n "$(containers_of "" local)$(containers_of "" srv2)" ]]; do
      sleep 0.5
    done
    k delete servers.berth.dev --all --timeout=90s >/dev/null 2>&1
    # The credential's key Secret carries berth-controller's finalizer: delete while it runs.
    k delete sshcredentials.berth.dev --all --timeout=60s >/dev/null 2>&1
    kubectl delete namespace "$NS" --timeout=90s >/dev/null 2>&1 ||
      warn "namespace $NS is still terminating"
  fi
  if ((had_controller == 0)); then berth_stop_controller; fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

apiserver_ok() { [[ "$(kubectl get --raw /readyz 2>/dev/null)" == ok ]]; }

# start_controller — (re)start berth-controller as hack/test.sh does, in a subshell: the
# process is nobody's job here (a SIGKILL draws no shell notice) and holds no fd 9.
start_controller() {
  (berth_start_controller "$CONTROLLER_LOG") 9>&- || die "berth-controller did not start again (log: $CONTROLLER_LOG)"
}

# containers_of RESOURCE SERVER — ids of the running containers Berth manages for RESOURCE
# (every Resource of the namespace when empty) on SERVER (local or srv2).
containers_of() {
  local filters=(--filter "label=berth.dev/namespace=$NS" --filter status=running)
  [[ -z "$1" ]] || filters+=(--filter "label=berth.dev/resource=$1")
  if [[ "$2" == srv2 ]]; then "${D2[@]}" ps -q "${filters[@]}" 2>/dev/null; else docker ps -q "${filters[@]}" 2>/dev/null; fi
}

# ---- setup --------------------------------------------------------------------------------

# free_port FROM TO [NETNS] — a TCP port nothing listens on.
free_port() {
  local port ns_exec=()
  [[ -z "${3:-}" ]] || ns_exec=(ip netns exec "$3")
  for port in $(shuf -i "$1-$2" -n 20); do
    if [[ -z "$("${ns_exec[@]}" ss -Hltn "sport = :$port" 2>/dev/null)" ]]; then
      echo "$port"
      return 0
    fi
  done
  die "no free port in $1-$2"
}

server_yaml() { # NAME HOST PORT HTTP_PORT [DOCKER_SOCKET]
  cat <<YAML
apiVersion: berth.dev/v1alpha1
kind: Server
metadata: { name: $1 }
spec:
  host: $2
  port: $3
  username: root
  credentialId: key
  proxy: { kind: caddy, httpPort: $4, httpsPort: $(($4 + 100)) }
  dockerSocketPath: ${5:-/var/run/docker.sock}
YAML
}

resource_yaml() { # NAME SERVER IMAGE
  cat <<YAML
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: $1 }
spec:
  projectId: prj-chaos
  environmentId: env-chaos
  serverId: $2
  name: $1
  kind: application
  source: { kind: docker-image, locator: "$3" }
  runtimeProfile: { healthCheck: { path: /healthz, intervalSeconds: 1, retries: 2 } }
  networkProfile: { internalPort: 8080 }
  autoDeploy: { enabled: true }
YAML
}

# body_has ADDRESS PORT HOST TEXT — the route answers with TEXT in its body.
body_has() {
  curl -s --max-time 2 -H "Host: $3" "http://$1:$2/" 2>/dev/null | grep -q "$4"
}

# srv2_usable — server 2 can run the sample app behind its edge proxy: its engine answers and
# holds (or is given) the images. Sets srv2_reason when it cannot.
srv2_usable() {
  if ! "${D2[@]}" info >/dev/null 2>&1; then
    srv2_reason="server 2's dockerd does not answer on $BERTH_SSH2_DOCKER_SOCKET"
    return 1
  fi
  local img missing=()
  for img in berth/sample-app:1 berth/sample-app:2 "$BERTH_EDGE_IMAGE"; do
    "${D2[@]}" image inspect "$img" >/dev/null 2>&1 || missing+=("$img")
  done
  if ((${#missing[@]})); then
    log "server 2: loading ${missing[*]} (it cannot pull)"
    if ! docker save "${missing[@]}" | "${D2[@]}" load >/dev/null; then
      srv2_reason="loading ${missing[*]} into server 2's dockerd failed"
      return 1
    fi
  fi
}

setup() {
  log "building and installing Berth"
  berth_build
  berth_install_crds
  berth_install_rbac
  if controller_leading; then
    had_controller=1
  else
    start_controller
  fi
  PORT1=$(free_port 17700 17799)
  log "namespace $NS: the local server (edge proxy on 127.0.0.1:$PORT1) and Resource web"
  kubectl create namespace "$NS" >/dev/null
  kubectl label namespace "$NS" berth.dev/test=true berth.dev/chaos=true >/dev/null
  k create secret generic key --from-file=privateKey="$BERTH_SSH_KEY" >/dev/null
  k apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: SshCredential
metadata: { name: key }
spec: { name: chaos key, privateKeySecretRef: { name: key, key: privateKey } }
YAML
  server_yaml local 127.0.0.1 "$BERTH_SSH_PORT" "$PORT1" | k apply -f - >/dev/null
  with_srv2=0
  if ((quick == 0)); then
    if srv2_usable; then
      with_srv2=1
      PORT2=$(free_port 17800 17899 berth-srv2)
      log "server 2: edge proxy on $BERTH_SSH2_HOST:$PORT2, Resource web2"
      # Its own engine: the default socket path is the first server's engine (the namespace
      # shares the file system), which would put its containers out of its sshd's reach.
      server_yaml srv2 "$BERTH_SSH2_HOST" "$BERTH_SSH2_PORT" "$PORT2" "$BERTH_SSH2_DOCKER_SOCKET" |
        k apply -f - >/dev/null
    else
      warn "server 2 left out: $srv2_reason"
    fi
  fi
  k wait --for=condition=Ready server/local --timeout=90s >/dev/null ||
    die "Server local did not become Ready: $(k get server local -o jsonpath='{.status.conditions}')"
  resource_yaml web local berth/sample-app:1 | k apply -f - >/dev/null
  if ((with_srv2)); then
    if k wait --for=condition=Ready server/srv2 --timeout=90s >/dev/null; then
      resource_yaml web2 srv2 berth/sample-app:1 | k apply -f - >/dev/null
    else
      with_srv2=0
      srv2_reason="Server srv2 did not become Ready: $(k get server srv2 -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
      warn "$srv2_reason"
    fi
  fi
  wait_for 120 "web serving v1 through 127.0.0.1:$PORT1" body_has 127.0.0.1 "$PORT1" web.localhost "sample-app v1"
  local targets=("local=127.0.0.1:$PORT1/web.localhost")
  if ((with_srv2)); then
    if wait_for_quiet 120 body_has "$BERTH_SSH2_HOST" "$PORT2" web2.localhost "sample-app v1"; then
      targets+=("srv2=$BERTH_SSH2_HOST:$PORT2/web2.localhost")
    else
      with_srv2=0
      srv2_reason="web2 on server 2 never answered through its edge proxy ($BERTH_SSH2_HOST:$PORT2)"
      warn "$srv2_reason"
    fi
  fi
  log "load: 8 kept-alive connections per target (${targets[*]})"
  python3 "$HACK_DIR/lib/chaos_load.py" --out "$LOAD_OUT" --max-seconds 1800 "${targets[@]}" 9>&- &
  LOAD_PID=$!
  wait_for 10 "the load client's first figures" test -s "$LOAD_OUT"
  sleep 1
}

# wait_for_quiet SECONDS CMD... — wait_for that returns 1 instead of dying.
wait_for_quiet() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.25
  done
}

# ---- one fault ----------------------------------------------------------------------------

load_figure() { jq -r --arg t "$1" --arg f "$2" '.[$t][$f] // 0' "$LOAD_OUT"; }

PHASES=(created detect plan package deploy verify)
phase_rank() {
  local i
  for i in "${!PHASES[@]}"; do [[ "${PHASES[$i]}" != "$1" ]] || { echo "$i"; return; }; done
  echo 0
}

# wait_moment DEPLOYMENT MOMENT — returns (printing what it saw) as soon as DEPLOYMENT exists
# (MOMENT created) or has reached phase MOMENT or a later one, watching it, within 60 s.
wait_moment() {
  local dep=$1 moment=$2 line fd pid deadline=$((SECONDS + 60)) want
  until k get deployments.berth.dev "$dep" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "never created"; return 0; }
    sleep 0.05
  done
  if [[ "$moment" == created ]]; then echo created; return 0; fi
  want=$(phase_rank "$moment")
  exec {fd}< <(timeout 60 kubectl -n "$NS" get deployments.berth.dev "$dep" --watch \
    --output-watch-events=false -o jsonpath='{.status.status} {.status.phase}{"\n"}' 2>/dev/null 9>&-)
  pid=$!
  line=""
  while IFS= read -r -t 60 -u "$fd" line; do
    local status=${line%% *} phase=${line#* }
    case "$status" in succeeded | failed | canceled)
      line="ended ($status) before $moment"
      break
      ;;
    esac
    if [[ -n "$phase" ]] && (($(phase_rank "$phase") >= want)); then
      line=$phase
      break
    fi
    line="not reached ($status ${phase:-})"
  done
  kill "$pid" 2>/dev/null || true
  exec {fd}<&-
  echo "${line:-not reached}"
}

# recovered RESOURCE SERVER ADDRESS PORT VERSION — Ready, the newest attempt succeeded, the
# route answers VERSION.
recovered() {
  local res=$1 address=$3 port=$4 version=$5 state
  body_has "$address" "$port" "$res.localhost" "sample-app $version" || return 1
  state=$(kubectl -n "$NS" get resources.berth.dev,deployments.berth.dev -o json 2>/dev/null |
    jq -r --arg r "$res" '
      (.items[] | select(.kind == "Resource" and .metadata.name == $r) | .status.conditions // [] | map(select(.type == "Ready"))[0].status) as $ready
      | ([.items[] | select(.kind == "Deployment" and .spec.resourceId == $r)]
         | sort_by(.metadata.creationTimestamp, (.metadata.name | split("-") | last | tonumber? // 0))
         | last | .status.status) as $newest
      | "\($ready) \($newest)"') || return 1
  [[ "$state" == "True succeeded" ]]
}

# stuck_attempts RESOURCE — names of RESOURCE's Deployments not in a final state.
stuck_attempts() {
  k get deployments.berth.dev -o json 2>/dev/null | jq -r --arg r "$1" '
    [.items[] | select(.spec.resourceId == $r)
     | select((.status.status // "") | IN("succeeded", "failed", "canceled") | not)
     | "\(.metadata.name):\(.status.status // "none")/\(.status.phase // "-")"] | join(",")'
}

# run_fault NAME ZERO_LOSS RESOURCE SERVER MOMENT ACTION — redeploy RESOURCE to the other image,
# run ACTION (which returns when the fault has ended) at MOMENT, measure and print one row.
run_fault() {
  local name=$1 zero_loss=$2 res=$3 server=$4 moment=$5 action=$6
  local address=127.0.0.1 port=$PORT1 target=local
  if [[ "$server" == srv2 ]]; then address=$BERTH_SSH2_HOST port=$PORT2 target=srv2; fi
  local image version gen dep seen t_start t_end a0 f0 a1 f1 verdict="ok" recovery
  image=$(k get "resources.berth.dev/$res" -o jsonpath='{.spec.source.locator}')
  if [[ "$image" == berth/sample-app:1 ]]; then image=berth/sample-app:2 version=v2; else image=berth/sample-app:1 version=v1; fi
  log "fault: $name ($res -> $image)"
  a0=$(load_figure "$target" answered) f0=$(load_figure "$target" failed)
  t_start=$(now)
  gen=$(k patch "resources.berth.dev/$res" --type merge \
    -p "{\"spec\":{\"source\":{\"locator\":\"$image\"}}}" -o jsonpath='{.metadata.generation}')
  dep=dep-$res-$gen
  seen=$(wait_moment "$dep" "$moment")
  log "  $dep: $seen; injecting"
  rm -f "$WORK/fault_end"
  local t_inject
  t_inject=$(now)
  "$action"
  # An action may say when its fault ended (a SIGKILL ends at once; the restart that follows
  # is part of the recovery, as a pod's restart is).
  t_end=$(cat "$WORK/fault_end" 2>/dev/null || now)
  : >"$WORK/supervised"
  if wait_for_quiet "$RECOVERY_LIMIT" supervised recovered "$res" "$server" "$address" "$port" "$version"; then
    recovery=$(secs "$t_end" "$(now)")
  else
    recovery=">$RECOVERY_LIMIT"
  fi
  # The old container gets SIGTERM once the new one serves; give it time to go.
  local containers stuck deadline=$((SECONDS + 15))
  sleep 2
  while :; do
    containers=$(containers_of "$res" "$server" | wc -l)
    stuck=$(stuck_attempts "$res")
    if [[ "$containers" == 1 && -z "$stuck" ]] || ((SECONDS >= deadline)); then break; fi
    sleep 0.5
  done
  a1=$(load_figure "$target" answered) f1=$(load_figure "$target" failed)
  # Retries of infrastructure faults the attempt went through (status.retry.count, if any).
  local retries
  retries=$(k get deployments.berth.dev "$dep" -o jsonpath='{.status.retry.count}' 2>/dev/null || true)
  local answered=$((a1 - a0)) failed=$((f1 - f0))
  if [[ "$recovery" == ">"* ]] || awk -v r="$recovery" -v g="$RECOVERY_GOAL" 'BEGIN { exit !(r > g) }'; then
    verdict="MISSED (recovery)"
  fi
  [[ "$containers" == 1 ]] || verdict="MISSED (containers: $containers)"
  [[ -z "$stuck" ]] || verdict="MISSED (stuck: $stuck)"
  if ((zero_loss && failed > 0)); then verdict="MISSED (failed requests)"; fi
  if [[ "$verdict" != ok ]]; then
    log "  $verdict; recent load failures: $(jq -c --arg t "$target" --argjson s "${t_start%.*}" \
      '[.[$t].recent_failures[] | select(.[0] >= $s)] | .[-5:]' "$LOAD_OUT")"
    log "  attempts: $(k get deployments.berth.dev -o jsonpath='{range .items[*]}{.metadata.name}={.status.status}/{.status.phase} {end}')"
  fi
  if [[ -s "$WORK/supervised" ]]; then
    verdict="$verdict; berth-controller exited and was restarted $(wc -l <"$WORK/supervised")x"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$seen" "$(secs "$t_inject" "$t_end")" "$recovery" "$answered" "$failed" \
    "$containers" "${stuck:-0}" "${retries:-0}" "$verdict" >>"$RESULTS"
  log "  recovered in ${recovery}s after the fault ended; $answered answered, $failed failed; $containers container(s); stuck: ${stuck:-none}"
}

# supervised CMD... — CMD, after starting berth-controller again if it has exited, as the
# kubelet restarts a pod's container (noted in the row: it must not happen on its own).
supervised() {
  if ! is_running berth-controller; then
    log "  berth-controller is not running (exited by itself); starting it as a pod restart would"
    echo "$(date +%T) exited" >>"$WORK/supervised"
    start_controller 2>/dev/null
  fi
  "$@"
}

# ---- faults -------------------------------------------------------------------------------

# As a pod would be: the process dies without warning and is started again at once.
controller_sigkill() {
  local pid
  read -r pid _ <"$BERTH_STACK_DIR/berth-controller.pid"
  kill -KILL "$pid"
  now >"$WORK/fault_end"
  start_controller 2>/dev/null
}
no_fault() { :; }
restart_apiserver() { "$HACK_DIR/stack.sh" restart apiserver 9>&- >/dev/null; }
restart_docker() { "$HACK_DIR/stack.sh" restart docker 9>&- >/dev/null; }
restart_sshd() { "$HACK_DIR/stack.sh" restart sshd 9>&- >/dev/null; }
cut_srv2() {
  "$HACK_DIR/stack.sh" cut-srv2 9>&-
  sleep "$CUT_SECONDS"
  "$HACK_DIR/stack.sh" restore-srv2 9>&- >/dev/null
}

# ---- main ---------------------------------------------------------------------------------

started=$SECONDS
setup
if ((quick)); then
  run_fault "controller SIGKILL in verify" 1 web local verify controller_sigkill
  run_fault "sshd restart in verify" 1 web local verify restart_sshd
else
  run_fault "none (plain redeploy)" 1 web local verify no_fault
  run_fault "controller SIGKILL, attempt created" 1 web local created controller_sigkill
  # detect, plan and package take milliseconds with a local image: deploy is the moment between.
  run_fault "controller SIGKILL in deploy" 1 web local deploy controller_sigkill
  run_fault "controller SIGKILL in verify" 1 web local verify controller_sigkill
  run_fault "kube-apiserver restart in deploy" 1 web local deploy restart_apiserver
  run_fault "sshd restart in verify" 1 web local verify restart_sshd
  run_fault "dockerd restart in deploy" 0 web local deploy restart_docker
  if ((with_srv2)); then
    run_fault "server 2 cut off ${CUT_SECONDS}s in deploy" 0 web2 srv2 deploy cut_srv2
  else
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "server 2 cut off ${CUT_SECONDS}s" - - - - - - - - \
      "not run: $srv2_reason" >>"$RESULTS"
  fi
fi

echo
{
  printf 'fault\tinjected at\tlasted (s)\trecovered (s)\tanswered\tfailed\tcontainers\tstuck\tretries\tverdict\n'
  cat "$RESULTS"
} | column -t -s $'\t'
echo
missed=$(grep -c $'\tMISSED' "$RESULTS" || true)
log "$(wc -l <"$RESULTS") fault(s) in $((SECONDS - started)) s; goals missed: $missed"
((missed == 0))
