# shellcheck shell=bash
# hack/bench.sh console-api: what a web console's reads cost on a release berth-shim started
# for the run (127.0.0.1:7074, as its ServiceAccount): GET /resources/{id} (1,000 resources)
# and GET /deployments?resourceId= (500 attempts in history) p99 against GET /projects p99,
# kept-alive and fresh connections; GET /resources on the wire with gzip and brotli; and the
# change feed's latency from a status write to the event at the client. The figures and goals
# are berth-bench-console's (tests/bench/berth-bench-console.rs).
# Source after common.sh, from hack/bench.sh.

BENCH_CONSOLE_ADDR=127.0.0.1:7074

bench_console_ready() { curl -fs --max-time 2 "http://$BENCH_CONSOLE_ADDR/readyz" >/dev/null; }

bench_console_api() {
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  # Release: the figures are about the shim users run. berth-controller only makes the
  # organization's namespace: the dev/test build.
  log "building berth-shim and berth-bench-console (release), berth-controller"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-apiserver-shim --bin berth-shim \
    --features berth-tests/bench -p berth-tests --bin berth-bench-console)
  (cd "$HACK_DIR/.." && cargo build --quiet -p berth-controller --bin berth-controller)
  berth_install_crds
  berth_install_rbac
  mkdir -p "$BERTH_RUN_DIR"
  local cleanup='stop_bg berth-shim-console' pid
  if ! controller_ready; then
    berth_start_controller "$BERTH_RUN_DIR/bench-controller.log"
    read -r pid _ <"$BERTH_STACK_DIR/berth-controller.pid"
    cleanup="$cleanup; bench_stop_own_controller $pid"
  fi
  # A shim of its own (name, port), so neither the test shim nor another bench's is touched.
  local kubeconfig logfile=$BERTH_RUN_DIR/bench-console-shim.log
  kubeconfig=$(berth_sa_kubeconfig berth-shim)
  stop_bg berth-shim-console
  KUBECONFIG=$kubeconfig BERTH_SHIM_ADDR=$BENCH_CONSOLE_ADDR \
    start_bg berth-shim-console "$logfile" "$CARGO_TARGET_DIR/release/berth-shim"
  # shellcheck disable=SC2064 # expand now: what this run started
  trap "$cleanup" EXIT
  wait_for 60 "bench berth-shim /readyz (log: $logfile)" bench_console_ready
  local out=$BERTH_RUN_DIR/bench-console.out status=0
  log "running (release berth-shim and benchmark client, $(nproc) cores)"
  BERTH_URL=http://$BENCH_CONSOLE_ADDR/api "$CARGO_TARGET_DIR/release/berth-bench-console" "$@" |
    tee "$out" || status=$?
  echo
  echo "Summary (one run, release builds, $(nproc) cores):"
  grep -E '^(PASS|FAIL):' "$out" || echo "no goal was measured (see the errors above)"
  return "$status"
}
