#!/usr/bin/env bash
# Benchmarks against the local stack. Each subcommand measures one thing and prints its figures.
#   hack/bench.sh ssh     64 concurrent Docker API calls through the SSH connection pool: SSH/TCP
#                         connections opened (goal: 1) and Docker `version` latency through the
#                         tunnel against the local socket, measured in one run
#   hack/bench.sh shim    GET /api/projects (100 projects) on berth-shim against the same LIST
#                         sent straight to the API server, concurrency 64: p50, p99, throughput
#   hack/bench.sh deploy  apply of a Resource (local image) until the first 200 through the edge
#                         proxy, p50 and p99 of N runs on the release controller, against a floor
#                         measured in the same run, and where the time went step by step
#   hack/bench.sh observe runtime logs (tail 1000) on the release shim against the raw Docker
#                         logs call through an SSH tunnel; cached health p99 against GET /projects
#                         p99; observation store inserts per second on SQLite and PostgreSQL
#   hack/bench.sh cli     `berth resources list -o json` wall time against curl of the same
#                         endpoint (start-up cost of the CLI), p50s in one run
#   hack/bench.sh monitor the agentless monitoring probe: CPU per tick for 100 containers
#                         against an idle tick; CPU and memory against docker stats
#   hack/bench.sh rollup  monitoring rollups of a week against an hour of samples; store bytes
#   hack/bench.sh tls     a DomainBinding applied until the first verified HTTPS 200 against
#                         Caddy's own automatic HTTPS from the same Pebble, p50s in one run
#   hack/bench.sh databases  a managed PostgreSQL provisioned until it accepts a connection
#                         against docker run of the same image; API requests 20 idle databases add
#   hack/bench.sh schedules  what 100 idle scheduled tasks cost (API requests, CPU); slot →
#                         container started over 20 runs on one slot, against docker run
#   hack/bench.sh backups  a managed PostgreSQL's backup until stored and its test restore,
#                         against pg_dump -Fc | gzip and pg_restore through the same sshd;
#                         API requests 50 idle backup policies add
#   hack/bench.sh scale   what idle apps cost: API requests, CPU, RSS and SSH channels at rest
#                         with N Resources, 200 applied at once, drift repair time
#   hack/bench.sh console-ui   the web console in Chromium: first-load JS, 1,000 resources, filter
#   hack/bench.sh console-api  the console's reads on a release shim: GET /resources/{id}
#                         (1,000 resources) and GET /deployments?resourceId= (500 attempts) p99
#                         against GET /projects p99; 1,000 resources on the wire compressed;
#                         change-feed latency from a status write to the client
#   hack/bench.sh in-cluster  Berth as pods on the stack's node from release images: image
#                         sizes, pod start to Ready, failover p50 against the Lease's duration,
#                         memory of each pod at rest
#   hack/bench.sh all     every bench here, one after the other, and one table of figures
#                         against goals; exits non-zero when any goal is missed
#   hack/bench.sh previews  a pull request opened until its preview serves, beside a push to
#                         serving of the same app; a closed one until nothing of it is left
#   hack/bench.sh build   a rebuild of a new commit (one file changed) against a plain docker
#                         build of the same files over SSH; push to serving; reuse of an
#                         unchanged commit's image
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=bench
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-scale.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-monitor.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-tls.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-databases.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-schedules.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-backups.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-build.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-previews.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-console.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-in-cluster.sh"
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/bench-all.sh"

usage() {
  cat <<USAGE
Usage: hack/bench.sh COMMAND [ARGS...]

Commands:
  all
        Every bench here with its defaults, one after the other (about 75 minutes on 2
        cores; in-cluster last, since it ends with Berth's processes stopped: run hack/dev.sh
        afterwards), each output in .berth/bench-all/NAME.out; then one table: bench, verdict,
        time, and each figure against its goal. Fails when any bench misses a goal.
  ssh [--concurrency N] [--bursts N] [--sequential N]
        Docker API calls against the stack's sshd (root@127.0.0.1:2222) through Berth's
        ServerConnectionPool; extra arguments go to the berth-bench-ssh binary.
  shim [--projects N] [--concurrency N] [--requests N] [--rounds N] [--goal X]
        GET /api/projects on a berth-shim started for the run (127.0.0.1:7071, as its
        ServiceAccount) against the same LIST on the API server with the admin kubeconfig;
        fails unless the shim's p99 is --goal (default 2) times lower. Extra arguments go to
        the berth-bench-shim binary.
  deploy [RUNS]
        With the release berth-controller (in place of the running one for the run), creates a
        Resource running berth/sample-app:1 RUNS times (default 10) and times each until the
        first 200 through the edge proxy; alternating with the floor, the same image started
        with raw Docker API calls through an open SSH tunnel until its first 200. Prints both
        p50s and p99s, their ratios, and where Berth's time went (each step of the attempt, from
        its timeline); fails above 1.1x (p50) or 1.3x (p99). BERTH_BENCH_REPORT=1: the running
        controller, figures only (hack/test.sh prints a 3-run report).
  observe [--runs N] [--concurrency N] [--requests N] [--rounds N] [--tail N]
        A release berth-shim started for the run (127.0.0.1:7072) and an app that printed 2000
        lines (a secret value in some, masked on the read). Alternating, in one run:
        GET /resources/{id}/runtime-logs?tailLines=1000 against the raw Docker logs call (tail
        1000, timestamps, both streams) through an SSH tunnel to the same server, p50 of --runs
        (default 30) each, kept-alive and fresh connections: fails above 1.3x; and
        GET /resources/{id}/health?mode=cached against GET /projects at --concurrency (default
        32), kept-alive and fresh: fails when a p99 is above 1.5x. Then berth-bench-store:
        timeline and health-history inserts per second on SQLite and PostgreSQL. Extra
        arguments go to the berth-bench-observe binary.
  cli [RUNS]
        A berth-shim started for the run (127.0.0.1:7073), signed in as the first
        administrator: \`berth resources list -o json\` (release build) against curl of
        GET /api/resources with the same token, alternating, RUNS times each (default 40).
        Prints both p50s and their ratio; fails above 1.5x.
  monitor [CONTAINERS] [RUNS]
        The probe berth-controller runs on every server tick (controller/src/observer_tasks/usage/
        probe.sh), over SSH against the stack's sshd: CPU seconds per tick (the probe and its
        children, RUNS runs, default 20) for CONTAINERS (default 100) running containers against
        none, alternating; fails at 1 % of one core at the default 30 s cadence. Then a
        container burning a core and holding 64 MiB: the probe's containerCpuPercent and memory
        against docker stats (fails beyond 10 points or 5 %).
  rollup [ARGS]
        The observation store's monitoring tables on SQLite (release berth-bench-rollup, about
        20 minutes, 3.5 GB in ~/.cache/berth): 7 days of minute samples for 100 containers
        recorded tick by tick; a user's rollup of the week in hour buckets with its
        topContributors read against the samples of the last hour (p99s, namespace goal <= 3x);
        store bytes per container-day; pruned to one day, another day recorded must fit the
        freed pages (goal <= 1.05x). ARGS go to the binary (--days, --resources, --runs).
  tls [RUNS]
        A server whose edge proxy publishes 5002/5003 (the ports Pebble validates on) and the
        sample app; RUNS times (default 3) a DomainBinding for a new host name until curl,
        trusting only Pebble's root, gets a 200 over HTTPS; before that, RUNS times Caddy's
        own automatic HTTPS (a Caddy container on the host network) obtaining a certificate
        from the same Pebble until the same curl succeeds. Prints both p50s and their ratio;
        fails above 1.5x.
  databases [RUNS]
        Release berth-controller; RUNS times (default 3) a managed PostgreSQL
        (DependencyResource) applied until pg_isready in its container answers, against docker
        run of the same image until the same check answers (fails above 1.5x); then API
        requests/min at rest with the server only and with 20 databases ready (fails above 0
        added), and the SSH channels/min they add.
  schedules
        Release berth-controller and the sample app; API requests/min and CPU at rest before
        and after 100 ScheduledTasks whose next slot is an hour away (fails above 0 requests
        or 0.5 % CPU added); then 20 tasks on `* * * * *` share one slot: slot → run container
        started as Docker records it, p50 and p99 (fails above 2,000 ms p99), beside docker
        run -d of the same image on the local engine.
  backups [MIB]
        Release berth-controller; a managed PostgreSQL of about MIB MiB (default 256): a
        DependencyResourceBackup until its sealed artifact is stored, against pg_dump -Fc |
        gzip through the same sshd to the same directory (fails above 1.3x); its test restore
        against the same steps by hand (throwaway container, pg_restore through sshd, count;
        fails above 1.3x). First, API requests/min at rest before and after 50 backup
        policies whose next slot is an hour away (fails above 0 added).
  scale [N] [DECLARED]
        Release berth-controller with N (default 300) Resources of the sample app on the local
        server, then DECLARED (default 2000) in all, the rest without a server. At rest for 60 s
        each: API requests/min (WATCH excluded) against a baseline with berth-controller
        stopped, its CPU and RSS, SSH channels/min; 200 Resources applied at once until Ready;
        drift repair (container removed by hand until the route answers 200). Fails when a
        goal of issue 10 is missed.
  build [RUNS]
        With the release berth-controller, in the quickstart's organization (run hack/dev.sh
        first), a Resource deploying a small Dockerfile app from the stack's git server. RUNS
        times each (default 5): a new commit changing one file, pushed with its signed webhook;
        the attempt's package phase (fetch, build, its cache warm) read from its timeline,
        against a plain `docker build` of the same commit's files over SSH to the same Docker
        (its cache warm), alternating — fails above 1.2x; the same pushes from `git push` until
        the new page answers through the edge proxy — fails above 15 s; and a new attempt of
        an unchanged commit (its image reused by its build key) against the plain build of
        unchanged files — fails above 1.2x.
  previews [RUNS]
        With the release berth-controller, in the quickstart's organization (run hack/dev.sh
        first), a small Dockerfile app from the stack's git server. RUNS times (default 5): a
        push to main until its page serves (the baseline); a branch pushed and its signed
        pull_request (opened) delivered until the PR's page answers at pr-<n>-<slug>; the
        pull request closed until the preview, everything labelled with it and its route are
        gone. p50s; fails when closed-to-clean exceeds 60 s.
  console-api [--resources N] [--attempts N] [--concurrency N] [--requests N] [--rounds N]
              [--feed-writes N]
        A release berth-shim started for the run (127.0.0.1:7074) and a throwaway organization
        of 1,000 resources, one with 500 attempts in its history. Alternating, kept-alive and
        fresh connections: GET /resources/{id} p99 against GET /projects p99 (goal <= 1.5x),
        GET /deployments?resourceId= p99 against GET /projects p99 (goal <= 2x); GET /resources
        on the wire with gzip and brotli (goal <= 150 KB); a Resource status written through
        the API server until its change event reaches a GET /events/stream client, p99 (goal
        <= 200 ms). Extra arguments go to the berth-bench-console binary.
  console-ui [N] [SECONDS]
        The web console in Debian's Chromium against that release berth-shim, as the stack's
        first administrator (run hack/dev.sh first), with a throwaway organization of N
        resources (default 1,000): first-load JavaScript on the wire (goal <= 80 KB gzip); the
        resources page from navigation to N rows on screen, median of 5 (goal <= 1 s, and <= 4x
        the same browser fetching and parsing GET /resources alone); a filter keystroke to the
        next paint, median of 20 (goal <= 100 ms); the JS heap (goal <= 150 MB). Then a chatty
        app (about 2,000 lines/s) on the quickstart's server, its Logs tab followed for SECONDS
        (default 30): lines painted per second (goal >= 1,000 and >= 0.9x node reading the bare
        event stream), the longest task (goal <= 100 ms), lines in the page (<= 2,000), heap.
  in-cluster [RUNS]
        Berth as pods on the stack's node (hack/stack.sh node up) from release images built for
        the run (berth/controller:bench, berth/shim:bench), the quickstart applied: image sizes
        (goal <= 60 MB), each pod's creation to Ready, memory of each pod 30 s after the
        quickstart is Ready (goals <= 64 MiB shim, <= 96 MiB controller), and RUNS (default 5)
        failovers after a delete and after a forced kill of the leader's pod: p50 against the
        Lease's 15 s (goal <= 15 s). Ends with the node down: run hack/dev.sh afterwards.
USAGE
}

# bench_local_server NAMESPACE PORT [HTTPS_PORT]: a new namespace holding the stack's sshd as
# Server `local` (its key in Secret `key`), its edge proxy on PORT (HTTPS on HTTPS_PORT, default
# PORT+1); returns once the Server is Ready.
bench_local_server() {
  local ns=$1 port=$2 https_port=${3:-$(($2 + 1))}
  kubectl create namespace "$ns" >/dev/null
  kubectl -n "$ns" create secret generic key --from-file=privateKey="$BERTH_SSH_KEY" >/dev/null
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: SshCredential
metadata: { name: key }
spec: { name: bench key, privateKeySecretRef: { name: key, key: privateKey } }
---
apiVersion: berth.dev/v1alpha1
kind: Server
metadata: { name: local }
spec:
  host: 127.0.0.1
  port: $BERTH_SSH_PORT
  username: root
  credentialId: key
  proxy: { kind: caddy, httpPort: $port, httpsPort: $https_port }
YAML
  kubectl -n "$ns" wait --for=condition=Ready server/local --timeout=90s >/dev/null
}

# The stack must be up; starting it is cheap when it already runs.
stack_env() {
  BERTH_STACK_S3=1 "$HACK_DIR/stack.sh" up >&2
  eval "$("$HACK_DIR/stack.sh" env)"
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
}

bench_ssh() {
  stack_env
  log "building berth-bench-ssh"
  (cd "$HACK_DIR/.." && cargo build --quiet --features berth-tests/bench -p berth-tests --bin berth-bench-ssh)
  log "running (debug build; the same profile the controller runs with in dev and test)"
  "$CARGO_TARGET_DIR/debug/berth-bench-ssh" "$@"
}

BENCH_SHIM_ADDR=127.0.0.1:7071

bench_shim_ready() { curl -fs --max-time 2 "http://$BENCH_SHIM_ADDR/readyz" >/dev/null; }

bench_shim() {
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  log "building Berth and berth-bench-shim"
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-apiserver-shim -p berth-controller -p berth-tests --features berth-tests/bench)
  berth_install_crds
  berth_install_rbac
  # Organizations get their namespace from berth-controller; reuse one that runs already.
  local cleanup='stop_bg berth-shim-bench'
  if ! controller_leading; then
    berth_start_controller "$BERTH_RUN_DIR/bench-controller.log"
    cleanup="$cleanup; berth_stop_controller"
  fi
  # A shim of its own, so a dev or test shim on 7070 is neither measured nor disturbed.
  local kubeconfig logfile=$BERTH_RUN_DIR/bench-shim.log
  kubeconfig=$(berth_sa_kubeconfig berth-shim)
  stop_bg berth-shim-bench
  KUBECONFIG=$kubeconfig BERTH_SHIM_ADDR=$BENCH_SHIM_ADDR \
    start_bg berth-shim-bench "$logfile" "$BERTH_BIN_DIR/berth-shim"
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "$cleanup" EXIT
  wait_for 60 "bench berth-shim /readyz (log: $logfile)" bench_shim_ready
  log "running (debug builds, the profile dev and test run with)"
  "$CARGO_TARGET_DIR/debug/berth-bench-shim" --url "http://$BENCH_SHIM_ADDR/api" "$@"
}

# hack/bench.sh deploy [RUNS]: the release berth-controller, as users run it, in place of the
# running one for the run (the dev build comes back after), and a release client. With
# BERTH_BENCH_REPORT=1 (hack/test.sh's report line): the controller that runs, a debug client,
# figures printed and never failed on.
bench_deploy() {
  local runs=${1:-10} port=18990 ns="bench-deploy-$RANDOM" profile=release
  local goals=(--goal 1.1 --goal-p99 1.3)
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  if [[ -n "${BERTH_BENCH_REPORT:-}" ]]; then
    profile=debug
    goals=(--report)
    (cd "$HACK_DIR/.." && cargo build --quiet --features berth-tests/bench -p berth-tests --bin berth-bench-deploy)
  else
    log "building berth-controller and berth-bench-deploy (release)"
    (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-controller --bin berth-controller \
      --features berth-tests/bench -p berth-tests --bin berth-bench-deploy)
    (cd "$HACK_DIR/.." && cargo build --quiet -p berth-controller --bin berth-controller)
    berth_install_crds
    berth_install_rbac
    # It replaces berth-controller: not while an integration run uses it.
    exec 9>"$BERTH_STACK_DIR/integration.lock"
    flock 9
    BERTH_BIN_DIR=$CARGO_TARGET_DIR/release berth_start_controller \
      "$BERTH_RUN_DIR/bench-controller.log" 9>&-
  fi
  # The Server goes first, while the controller still runs, so its finalizer removes the proxy.
  local cleanup="kubectl -n $ns delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true"
  cleanup="$cleanup; kubectl delete namespace $ns --wait=false >/dev/null 2>&1 || true"
  if [[ -z "${BERTH_BENCH_REPORT:-}" ]]; then
    cleanup="$cleanup; BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller $BERTH_RUN_DIR/controller.log 9>&-"
  fi
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "$cleanup" EXIT
  bench_local_server "$ns" "$port"
  # Both sides are timed inside berth-bench-deploy on connected clients: kubectl's own start
  # (about 0.2 s here) is not Berth's cost, and the floor pays no SSH login either.
  "$CARGO_TARGET_DIR/$profile/berth-bench-deploy" --namespace "$ns" --server local \
    --proxy-port "$port" --runs "$runs" "${goals[@]}"
}

BENCH_OBSERVE_ADDR=127.0.0.1:7072
# The benchmark server's edge proxy (HTTPS on the next port); deploy uses 18990, scale 18980.
BENCH_OBSERVE_PROXY_PORT=18960

bench_observe_ready() { curl -fs --max-time 2 "http://$BENCH_OBSERVE_ADDR/readyz" >/dev/null; }

# bench_stop_own_controller PID: stops berth-controller only if it is still the one this run
# started; a test run may have replaced it with its own meanwhile.
bench_stop_own_controller() {
  local pid
  read -r pid _ <"$BERTH_STACK_DIR/berth-controller.pid" 2>/dev/null || return 0
  if [[ "$pid" == "$1" ]]; then berth_stop_controller; fi
}

# bench_own_shim NAME ADDR READY_FN: a release berth-shim of the bench's own (process NAME,
# listening on ADDR), so neither the test shim nor another bench's is touched, and
# berth-controller if none leads; stops what it started when the script exits.
bench_own_shim() {
  local name=$1 addr=$2 ready=$3 cleanup="stop_bg $1" pid
  if ! controller_leading; then
    berth_start_controller "$BERTH_RUN_DIR/bench-controller.log"
    read -r pid _ <"$BERTH_STACK_DIR/berth-controller.pid"
    cleanup="$cleanup; bench_stop_own_controller $pid"
  fi
  local kubeconfig logfile=$BERTH_RUN_DIR/$name.log
  kubeconfig=$(berth_sa_kubeconfig berth-shim)
  stop_bg "$name"
  KUBECONFIG=$kubeconfig BERTH_SHIM_ADDR=$addr \
    start_bg "$name" "$logfile" "$CARGO_TARGET_DIR/release/berth-shim"
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "$cleanup" EXIT
  wait_for 60 "bench berth-shim /readyz (log: $logfile)" "$ready"
}

bench_observe() {
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  # Release: the figures are about the shim users run, and the raw baseline runs Berth's SSH
  # code in the same profile. berth-controller only deploys the app: the dev/test build.
  log "building berth-shim and the observe and store benches (release), berth-controller"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-apiserver-shim --bin berth-shim \
    --features berth-tests/bench -p berth-tests --bin berth-bench-observe --bin berth-bench-store)
  (cd "$HACK_DIR/.." && cargo build --quiet -p berth-controller --bin berth-controller)
  berth_install_crds
  berth_install_rbac
  bench_own_shim berth-shim-observe "$BENCH_OBSERVE_ADDR" bench_observe_ready
  local out=$BERTH_RUN_DIR/bench-observe.out status=0
  log "running (release berth-shim and benchmark clients, $(nproc) cores)"
  BERTH_URL=http://$BENCH_OBSERVE_ADDR/api "$CARGO_TARGET_DIR/release/berth-bench-observe" \
    --proxy-port "$BENCH_OBSERVE_PROXY_PORT" "$@" | tee "$out" || status=$?
  echo
  echo "3. observation store inserts per second"
  "$CARGO_TARGET_DIR/release/berth-bench-store" | tee -a "$out" || status=$?
  echo
  echo "Summary (one run, release builds, $(nproc) cores):"
  grep -E '^(PASS|FAIL):' "$out" || echo "no goal was measured (see the errors above)"
  return "$status"
}

BENCH_CLI_ADDR=127.0.0.1:7073

bench_cli_ready() { curl -fs --max-time 2 "http://$BENCH_CLI_ADDR/readyz" >/dev/null; }

# bench_cli_p50 FILE: the median of the numbers in FILE, one a line.
bench_cli_p50() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

bench_cli() {
  local runs=${1:-40}
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  log "building berth-shim and the berth CLI (release)"
  (cd "$HACK_DIR/.." && cargo build --quiet -p berth-apiserver-shim --bin berth-shim)
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-cli --bin berth)
  berth_install_crds
  berth_install_rbac
  local kubeconfig logfile=$BERTH_RUN_DIR/bench-cli-shim.log
  kubeconfig=$(berth_sa_kubeconfig berth-shim)
  stop_bg berth-shim-cli
  KUBECONFIG=$kubeconfig BERTH_SHIM_ADDR=$BENCH_CLI_ADDR \
    start_bg berth-shim-cli "$logfile" "$BERTH_BIN_DIR/berth-shim"
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "stop_bg berth-shim-cli; rm -rf $work" EXIT
  wait_for 60 "bench berth-shim /readyz (log: $logfile)" bench_cli_ready
  export BERTH_URL=http://$BENCH_CLI_ADDR/api
  berth_bootstrap_admin
  [[ -n "${BERTH_ADMIN_PASSWORD:-}" ]] || die "the first administrator's password is unknown"
  local token
  token=$(jq -n --arg e "$BERTH_ADMIN_EMAIL" --arg p "$BERTH_ADMIN_PASSWORD" \
    '{email: $e, password: $p, clientKind: "cli"}' |
    curl -fsS -X POST -H 'Content-Type: application/json' -d @- "$BERTH_URL/auth/login" |
    jq -r .token)
  local berth=$CARGO_TARGET_DIR/release/berth start i
  # Same endpoint, same token, same output (the JSON body): only the client differs.
  curl_once() {
    curl -fsS -H "Authorization: Bearer $token" "$BERTH_URL/resources" >/dev/null
  }
  berth_once() {
    HOME=$work XDG_CONFIG_HOME=$work/config BERTH_TOKEN=$token "$berth" resources list -o json >/dev/null
  }
  curl_once && berth_once # warm both paths
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N); curl_once; echo $((($(date +%s%N) - start) / 1000)) >>"$work/curl.us"
    start=$(date +%s%N); berth_once; echo $((($(date +%s%N) - start) / 1000)) >>"$work/berth.us"
  done
  local curl_p50 berth_p50
  curl_p50=$(bench_cli_p50 "$work/curl.us")
  berth_p50=$(bench_cli_p50 "$work/berth.us")
  echo "GET /api/resources, $runs runs each, $(nproc) cores:"
  echo "  curl                               p50 ${curl_p50} us"
  echo "  berth resources list -o json       p50 ${berth_p50} us"
  awk -v b="$berth_p50" -v c="$curl_p50" 'BEGIN {
    r = b / c
    printf "  ratio %.2fx (goal <= 1.5x)\n", r
    if (r > 1.5) { print "FAIL: berth is slower than 1.5x curl"; exit 1 }
    print "PASS: berth within 1.5x curl"
  }'
}

bench_rollup() {
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
  log "building berth-bench-rollup (release)"
  (cd "$HACK_DIR/.." && cargo build --quiet --release --features berth-tests/bench -p berth-tests --bin berth-bench-rollup)
  TMPDIR=$BERTH_CACHE "$CARGO_TARGET_DIR/release/berth-bench-rollup" "$@"
}

case "${1:-}" in
  all) shift; BERTH_REPO_ROOT=$(cd "$HACK_DIR/.." && pwd) bench_all "$@" ;;
  ssh) shift; bench_ssh "$@" ;;
  cli) shift; bench_cli "$@" ;;
  shim) shift; bench_shim "$@" ;;
  deploy) shift; bench_deploy "$@" ;;
  observe) shift; bench_observe "$@" ;;
  monitor) shift; bench_monitor "$@" ;;
  rollup) shift; bench_rollup "$@" ;;
  tls) shift; bench_tls "$@" ;;
  databases) shift; bench_databases "$@" ;;
  schedules) shift; bench_schedules "$@" ;;
  backups) shift; bench_backups "$@" ;;
  scale) shift; bench_scale "$@" ;;
  build) shift; bench_build "$@" ;;
  previews) shift; bench_previews "$@" ;;
  console-api) shift; bench_console_api "$@" ;;
  console-ui) shift; bench_console_ui "$@" ;;
  in-cluster) shift; bench_in_cluster "$@" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
