#!/usr/bin/env bash
# Container images of Berth itself, built locally from cargo's binaries without pulling
# (hack/lib/berth-images.sh); tag and push the release ones to publish them to a registry.
#   hack/images.sh berth [debug|release] [TAG]   berth/controller:TAG and berth/shim:TAG
#                                                from what `cargo build [--release]` left
#                                                (TAG: dev for debug, else the workspace version)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_REPO_ROOT BERTH_LOG_PREFIX=images
BERTH_REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
source "$HACK_DIR/lib/common.sh"
source "$HACK_DIR/lib/images.sh"
source "$HACK_DIR/lib/berth-images.sh"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}

images_berth() {
  local profile=${1:-debug} tag=${2:-}
  if [[ -z "$tag" ]]; then
    tag=dev
    [[ "$profile" == release ]] && tag=$(_workspace_version)
  fi
  ensure_berth_images "$profile" "$tag"
  docker image ls --format 'table {{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}' \
    --filter "reference=$BERTH_RUNTIME_IMAGE" --filter "reference=berth/controller:$tag" \
    --filter "reference=berth/shim:$tag"
}

_workspace_version() {
  sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$BERTH_REPO_ROOT/Cargo.toml"
}

case "${1:-}" in
  berth) shift && images_berth "$@" ;;
  *) echo "Usage: hack/images.sh berth [debug|release] [TAG]" >&2; exit 2 ;;
esac
