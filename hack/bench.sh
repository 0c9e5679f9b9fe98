#!/usr/bin/env bash
# Benchmarks against the local stack. Each subcommand measures one thing and prints its figures.
#   hack/bench.sh ssh     64 concurrent Docker API calls through the SSH connection pool: SSH/TCP
#                         connections opened (goal: 1) and Docker `version` latency through the
#                         tunnel against the local socket, measured in one run
#   hack/bench.sh shim    GET /api/projects (100 projects) on berth-shim against the same LIST
#                         sent straight to the API server, concurrency 64: p50, p99, throughput
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=bench
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"

usage() {
  cat <<USAGE
Usage: hack/bench.sh COMMAND [ARGS...]

Commands:
  ssh [--concurrency N] [--bursts N] [--sequential N]
        Docker API calls against the stack's sshd (root@127.0.0.1:2222) through Berth's
        ServerConnectionPool; extra arguments go to the berth-bench-ssh binary.
  shim [--projects N] [--concurrency N] [--requests N] [--rounds N] [--goal X]
        GET /api/projects on a berth-shim started for the run (127.0.0.1:7071, as its
        ServiceAccount) against the same LIST on the API server with the admin kubeconfig;
        fails unless the shim's p99 is --goal (default 2) times lower. Extra arguments go to
        the berth-bench-shim binary.
USAGE
}

# The stack must be up; starting it is cheap when it already runs.
stack_env() {
  "$HACK_DIR/stack.sh" up >&2
  eval "$("$HACK_DIR/stack.sh" env)"
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
}

bench_ssh() {
  stack_env
  log "building berth-bench-ssh"
  (cd "$HACK_DIR/.." && cargo build --quiet -p berth-controller --bin berth-bench-ssh)
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
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-apiserver-shim -p berth-controller)
  berth_install_crds
  berth_install_rbac
  # Organizations get their namespace from berth-controller; reuse one that runs already.
  local cleanup='stop_bg berth-shim-bench'
  if ! controller_ready; then
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

case "${1:-}" in
  ssh) shift; bench_ssh "$@" ;;
  shim) shift; bench_shim "$@" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
