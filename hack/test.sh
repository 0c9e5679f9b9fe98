#!/usr/bin/env bash
# README command 2: every check CI runs. Formatting, lints, unit tests, then the integration
# tests against the real local stack (started here if it is not running).
#   hack/test.sh                 everything
#   hack/test.sh -- FILTER       only integration tests whose name contains FILTER
#   BERTH_TEST_QUICK=1 hack/test.sh -- FILTER   skip fmt, clippy and unit tests (dev loop)
#   hack/test.sh -- schemathesis                 only the schemathesis run against the shim
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=test
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"

filter=()
if [[ "${1:-}" == "--" ]]; then
  filter=("${@:2}")
elif [[ -n "${1:-}" ]]; then
  echo "Usage: hack/test.sh [-- FILTER]" >&2
  exit 2
fi

step() { log "== $*"; }
started=$SECONDS

# tmux: the CLI's interactive tests (terminal, deploy progress) run it on a real pane.
ensure_packages curl:curl jq:jq tmux:tmux
cd "$(dirname "$HACK_DIR")"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
# Every fresh clone compiles Berth's own crates under new hashes, so their old artifacts and
# incremental caches pile up in the shared target dir (tens of GB within days); a clone's
# incremental cache is never reused, so CI writes none.
prune_build_cache "$CARGO_TARGET_DIR"
if [[ -n "${CI:-}" ]]; then
  export CARGO_INCREMENTAL=0
fi
if [[ -z "${BERTH_TEST_QUICK:-}" ]]; then
  step "cargo fmt --check"
  cargo fmt --all -- --check

  step "clippy (-D warnings)"
  # --all-features: the benchmark clients (berth-tests/bench) are linted too.
  cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings

  step "no two modules import each other, at any level of any crate"
  python3 "$HACK_DIR/lib/module_cycles.py" --all ./*/src ./*/*/src

  step "no route module of the shim imports another (they share code through its domain layer)"
  python3 "$HACK_DIR/lib/module_cycles.py" --no-sibling-imports apiserver-shim/src routes

  step "unit tests"
  cargo test --workspace --exclude berth-tests --quiet

  step "web console: the committed build and API types match their sources"
  "$HACK_DIR/console.sh" check
else
  # The browser tests need Chromium and the console's npm packages.
  "$HACK_DIR/console.sh" deps
fi

step "local stack"
# One integration run at a time: each restarts Berth's processes under the other's tests.
mkdir -p "$BERTH_STACK_DIR"
exec 9>"$BERTH_STACK_DIR/integration.lock"
if ! flock -n 9; then
  log "another hack/test.sh is running its integration tests; waiting for it"
  flock 9
fi
# fd 9 closed: the stack's daemons outlive this run and must not hold its lock.
# The backup tests need the stack's S3 store (built once on a fresh machine).
BERTH_STACK_S3=1 "$HACK_DIR/stack.sh" up 9>&-
# A node left up by an interrupted run: the suite runs Berth as processes on loopback.
if [[ -f "$BERTH_STACK_DIR/node.mode" ]]; then "$HACK_DIR/stack.sh" node down 9>&-; fi
eval "$("$HACK_DIR/stack.sh" env)"
if [[ -z "${BERTH_TEST_QUICK:-}" ]]; then
  # The unit tests above ran the store's tests on SQLite; with the stack's database they run
  # on PostgreSQL too.
  step "observation store tests on PostgreSQL"
  [[ -n "${BERTH_TEST_POSTGRES_URL:-}" ]] || die "hack/stack.sh env gave no BERTH_TEST_POSTGRES_URL"
  [[ -s "${BERTH_TEST_POSTGRES_CA:-}" ]] || die "hack/stack.sh env gave no BERTH_TEST_POSTGRES_CA"
  cargo test -p berth-observations --quiet
fi
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/berth.sh"
mkdir -p "$BERTH_RUN_DIR"

step "install Berth into the stack"
berth_build
berth_install_crds
berth_install_rbac
# Namespaces left by an interrupted run would only slow the API server down.
kubectl delete namespace -l berth.dev/test=true --wait=false >/dev/null 2>&1 || true
berth_remove_orphan_proxies
berth_remove_orphan_dependencies
berth_remove_orphan_volumes
# Fresh logs per run, so the secret scan below judges this run only.
: >"$BERTH_RUN_DIR/test-controller.log"
: >"$BERTH_RUN_DIR/test-shim.log"
# Monitoring samples every 5 s (30 s by default), so tests see two within seconds.
export BERTH_MONITORING_INTERVAL_SECONDS=5
berth_start_controller "$BERTH_RUN_DIR/test-controller.log"
trap 'berth_stop_shim; berth_stop_controller' EXIT
berth_start_shim "$BERTH_RUN_DIR/test-shim.log"
berth_bootstrap_admin
# examples/quickstart's server needs its key Secret (examples_apply applies every example).
berth_quickstart_secret

# A failed test's cause is often in Berth's own log, which CI does not keep: show its end.
logs_excerpt() {
  local file
  for file in "$BERTH_RUN_DIR/test-controller.log" "$BERTH_RUN_DIR/test-shim.log"; do
    echo "---- warnings and errors at the end of $(basename "$file")" >&2
    sed 's/\x1b\[[0-9;]*m//g' "$file" | grep -E ' (WARN|ERROR) ' | tail -n 40 | cut -c1-400 >&2 || true
  done
}

# Runs `cargo test` for the integration tests with the given arguments; on failure shows
# Berth's logs and then, last so that a CI summary's tail holds it, why each failed test failed.
integration_tests() {
  local output=$BERTH_RUN_DIR/test-output.log
  cargo test -p berth-tests --test integration -- "$@" 2>&1 | tee "$output" && return 0
  logs_excerpt
  echo "---- why the failed tests failed" >&2
  grep -E -A8 "^---- .* stdout ----$|panicked at" "$output" | grep -vE '^note: |^stack backtrace' |
    cut -c1-400 | head -n 80 >&2 || true
  exit 1
}

step "integration tests (real API server, Docker, sshd)"
export BERTH_CONTROLLER_LOG=$BERTH_RUN_DIR/test-controller.log BERTH_BIN_DIR
export BERTH_CONTROLLER_KUBECONFIG=$BERTH_STACK_DIR/berth-controller.kubeconfig
export BERTH_SHIM_LOG=$BERTH_RUN_DIR/test-shim.log
# The browser flows run after the rest, on their own: Chromium's load would slow the others.
integration_tests --skip disruptive:: --skip console_browser:: --skip in_cluster:: "${filter[@]}"
if [[ ${#filter[@]} -eq 0 ]]; then
  # A report, not a test: a noisy machine must not fail CI, but a slower deploy path shows in
  # every CI log (hack/bench.sh deploy is the bench with goals).
  step "deploy bench, 3 runs on this run's controller (reported, not asserted)"
  BERTH_BENCH_REPORT=1 "$HACK_DIR/bench.sh" deploy 3 2>&1 | grep -vE '^\[(stack|bench)\]' ||
    log "the deploy bench report did not finish (not a test failure)"
fi
if [[ ${#filter[@]} -eq 0 || "${filter[*]}" == *console* ]]; then
  step "web console in Chromium"
  integration_tests console_browser::
fi
# Faults that disturb the shared stack (dockerd and sshd restarts) run alone, after the rest.
if [[ ${#filter[@]} -eq 0 || "${filter[*]}" == *disruptive* ]]; then
  step "disruptive tests, one at a time"
  integration_tests --test-threads=1 disruptive::
fi
if [[ ${#filter[@]} -eq 0 ]]; then
  # The bounded fault suite: a controller SIGKILL and an sshd restart mid-redeploy under
  # kept-alive load (hack/chaos.sh --quick). It inherits this run's lock on fd 9.
  step "fault suite (hack/chaos.sh --quick)"
  timeout 300 "$HACK_DIR/chaos.sh" --quick
fi

if [[ ${#filter[@]} -eq 0 || "${filter[*]}" == *in_cluster* ]]; then
  # Berth as pods on a real kubelet, in place of the processes; they come back afterwards.
  step "Berth in the cluster: pods on the stack's node (hack/stack.sh node up)"
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/in-cluster.sh"
  berth_stop_shim
  berth_stop_controller
  in_cluster_up
  in_cluster_apply
  BERTH_URL=$(in_cluster_url) BERTH_SSH_HOST=$BERTH_NODE_IP \
    cargo test -p berth-tests --test integration -- --test-threads=1 --nocapture in_cluster:: ||
    { in_cluster_logs; in_cluster_first_admin_repair; in_cluster_remove; exit 1; }
  in_cluster_first_admin_repair
  # Its test namespaces go while the in-cluster controller can still reach their Server (the
  # node): otherwise their edge proxies outlive them (berth_remove_orphan_proxies).
  kubectl wait --for=delete namespace -l berth.dev/test=true --timeout=120s >/dev/null 2>&1 || true
  in_cluster_remove
  "$HACK_DIR/stack.sh" node down 9>&-
  eval "$("$HACK_DIR/stack.sh" env)"
  berth_start_controller "$BERTH_RUN_DIR/test-controller.log"
  berth_start_shim "$BERTH_RUN_DIR/test-shim.log"
fi

# Last, because it changes and deletes whatever it reaches; `-- schemathesis` runs it alone.
if ((${#filter[@]} == 0)) || [[ "${filter[*]}" == schemathesis ]]; then
  step "schemathesis: no request to /api answers 5xx"
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/schemathesis.sh"
  berth_schemathesis
fi

step "secret scan of Berth's logs"
# Tokens carry recognisable prefixes and keys their PEM armour; none may reach a log line.
leaks=$(grep -nE 'b(st|dt)_[A-Za-z0-9_-]{20,}|BEGIN [A-Z ]*PRIVATE KEY|"password":"[^*]' \
  "$BERTH_RUN_DIR/test-controller.log" "$BERTH_RUN_DIR/test-shim.log" || true)
if [[ -n "$leaks" ]]; then
  echo "$leaks" | cut -c1-160 >&2
  die "secret values found in Berth's logs"
fi

log "all checks passed in $((SECONDS - started)) s"
