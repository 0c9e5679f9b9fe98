#!/usr/bin/env bash
# The web console (apiserver-shim/console): a Svelte SPA whose built files are committed and
# embedded in berth-shim, so `cargo build` needs no Node.
#   hack/console.sh deps     npm ci (the browser tests' playwright-core too) and Debian's chromium
#   hack/console.sh build    rebuild dist/ and the API types (src/lib/api-types.d.ts) after a change
#   hack/console.sh check    rebuild both and fail if they differ from what is committed
#   The browser flows (apiserver-shim/console/tests) run inside the integration tests:
#   hack/test.sh -- console_browser
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=console
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"
ROOT=$(dirname "$HACK_DIR")
CONSOLE=$ROOT/apiserver-shim/console
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}

deps() {
  ensure_packages node:nodejs npm:npm chromium:chromium
  log "npm ci (apiserver-shim/console)"
  (cd "$CONSOLE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}

types() {
  local document
  document=$(mktemp --suffix=.json)
  (cd "$ROOT" && cargo run --quiet -p berth-apiserver-shim --bin berth-shim -- openapi >"$document")
  (cd "$CONSOLE" && npx --no-install openapi-typescript "$document" -o src/lib/api-types.d.ts >/dev/null 2>&1)
  rm -f "$document"
}

build() {
  log "building the console (vite) and its API types"
  types
  (cd "$CONSOLE" && npx --no-install vite build --logLevel warn)
}

check() {
  build
  if ! git -C "$ROOT" diff --exit-code --stat -- apiserver-shim/console/dist apiserver-shim/console/src/lib/api-types.d.ts ||
    [[ -n "$(git -C "$ROOT" status --porcelain -- apiserver-shim/console/dist)" ]]; then
    die "the committed console build or API types are stale: run hack/console.sh build and commit"
  fi
  log "the committed console build matches its sources"
}

case "${1:-}" in
  deps) deps ;;
  build) deps && build ;;
  check) deps && check ;;
  *) echo "Usage: hack/console.sh deps|build|check" >&2; exit 2 ;;
esac
