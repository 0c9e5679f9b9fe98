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

# bench_console_shim WHAT: the stack, Berth's CRDs and RBAC, berth-controller (started when
# none runs: organizations need their namespaces) and a release berth-shim of the run's own on
# BENCH_CONSOLE_ADDR; stops what it started when the script exits.
bench_console_shim() {
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  # Release: the figures are about the shim users run. berth-controller only makes the
  # organization's namespace: the dev/test build.
  log "building berth-shim (release) and berth-controller"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-apiserver-shim --bin berth-shim "$@")
  (cd "$HACK_DIR/.." && cargo build --quiet -p berth-controller --bin berth-controller)
  berth_install_crds
  berth_install_rbac
  mkdir -p "$BERTH_RUN_DIR"
  bench_own_shim berth-shim-console "$BENCH_CONSOLE_ADDR" bench_console_ready
}

# bench_summary OUT STATUS: the goals a run printed, after its full output.
bench_summary() {
  echo
  echo "Summary (one run, release builds, $(nproc) cores):"
  grep -E '^(PASS|FAIL):' "$1" || echo "no goal was measured (see the errors above)"
  return "$2"
}

bench_console_api() {
  bench_console_shim --features berth-tests/bench -p berth-tests --bin berth-bench-console
  local out=$BERTH_RUN_DIR/bench-console.out status=0
  log "running (release berth-shim and benchmark client, $(nproc) cores)"
  BERTH_URL=http://$BENCH_CONSOLE_ADDR/api "$CARGO_TARGET_DIR/release/berth-bench-console" "$@" |
    tee "$out" || status=$?
  bench_summary "$out" "$status"
}

# hack/bench.sh console-ui [N] [SECONDS]: the console in Debian's Chromium against the release
# shim, as the stack's first administrator: N resources listed (apiserver-shim/console/bench/
# ui.mjs), a chatty app's logs tailed for SECONDS (default 600: ten minutes) on the quickstart's
# server (logs.mjs), then Deploy pressed until the attempt's first event is on screen
# (first-event.mjs).
# hack/dev.sh must have run (the administrator, the quickstart); the goals are the scripts'.
bench_console_ui() {
  [[ -s "$BERTH_STACK_DIR/admin.env" ]] ||
    die "no administrator's credentials in $BERTH_STACK_DIR/admin.env: run hack/dev.sh first"
  "$HACK_DIR/console.sh" deps
  bench_console_shim
  local out=$BERTH_RUN_DIR/bench-console-ui.out status=0 bench=$HACK_DIR/../apiserver-shim/console/bench
  log "running (release berth-shim, $(chromium --version 2>/dev/null | awk '{print $1, $2}'), $(nproc) cores)"
  # shellcheck disable=SC1091 # written by berth_bootstrap_admin
  (
    source "$BERTH_STACK_DIR/admin.env"
    export BERTH_CONSOLE_URL=http://$BENCH_CONSOLE_ADDR BERTH_ADMIN_EMAIL BERTH_ADMIN_PASSWORD
    node "$bench/ui.mjs" "${1:-1000}"
    list=$?
    node "$bench/logs.mjs" "${2:-600}"
    logs=$?
    node "$bench/first-event.mjs" && exit $((list | logs))
  ) | tee "$out" || status=$?
  bench_summary "$out" "$status"
}
