# shellcheck shell=bash
# An S3-compatible object store for the stack, so backups to an `s3` BackupTarget go to a real
# one: Garage (crates.io `garage`, the self-hosted S3 store; AGPL — it runs beside Berth as a
# separate process and is never linked), built once with `cargo install` into
# $BERTH_CACHE/garage-$_GARAGE_VERSION like the API server (about 20 minutes on 2 cores, then
# cached). One node on 127.0.0.1, one bucket and one key made on the first start and kept.
# Source after common.sh, from hack/stack.sh. Every function is a no-op when its work is done.
# The stack runs it when it is built already or BERTH_STACK_S3=1 asks for it (hack/test.sh and
# hack/bench.sh do): the quickstart needs no S3 store, so a first `hack/dev.sh` does not wait
# for Garage's build.
#
#   up_s3     build Garage when missing, write its configuration once, start it
#   wait_s3   wait until it answers, then give it its layout, key and bucket (once)
#   down_s3   stop it (its data stays)
#   s3_ready  true when the bucket answers with the key
#   s3_env    export lines (hack/stack.sh env)
#
# Why Garage rather than s3s-fs (smaller, quicker to build): Garage is a store people run in
# production (signature V4 checked, multipart uploads, its own error documents), so what the
# tests see is what a user's store does. Its data blocks are stored uncompressed
# (compression_level "none"), so a test may read them to see that no plaintext arrived.

BERTH_S3_PORT=${BERTH_S3_PORT:-13900}
_S3_RPC_PORT=${BERTH_S3_RPC_PORT:-13901}
_GARAGE_VERSION=2.5.0
_GARAGE_ROOT=$BERTH_CACHE/garage-$_GARAGE_VERSION
_GARAGE=$_GARAGE_ROOT/bin/garage
BERTH_S3_DIR=$BERTH_STACK_DIR/garage
BERTH_S3_BUCKET=berth-backups
BERTH_S3_REGION=garage
# Fixed keys in Garage's format (GK and 24 hex digits; 64 hex digits), so a client set up
# before a restart keeps working. They guard a store on loopback holding test data only.
BERTH_S3_ACCESS_KEY_ID=GK0b5e7c1a9d3f2e4b6c8a0d1e
BERTH_S3_SECRET_ACCESS_KEY=7c3e9a1f5b2d8e4a6c0f3b7d9e1a5c2f8b4d6e0a3c7f9b1d5e2a8c4f6b0d3e7a

_garage() { "$_GARAGE" -c "$BERTH_S3_DIR/garage.toml" "$@"; }

_garage_build() {
  [[ -x "$_GARAGE" ]] && return 0
  log "s3: building Garage $_GARAGE_VERSION (once; cached in $_GARAGE_ROOT)"
  cargo install garage --version "$_GARAGE_VERSION" --locked --no-default-features \
    --features bundled-libs,sqlite --root "$_GARAGE_ROOT" \
    --target-dir "$BERTH_CACHE/build/garage" >"$LOGS/garage-build.log" 2>&1 ||
    die "s3: building Garage failed (log: $LOGS/garage-build.log)"
}

_garage_config() {
  mkdir -p "$BERTH_S3_DIR/meta" "$BERTH_S3_DIR/data"
  [[ -f "$BERTH_S3_DIR/rpc_secret" ]] || (umask 077 && openssl rand -hex 32 >"$BERTH_S3_DIR/rpc_secret")
  cat >"$BERTH_S3_DIR/garage.toml.new" <<TOML
metadata_dir = "$BERTH_S3_DIR/meta"
data_dir = "$BERTH_S3_DIR/data"
db_engine = "sqlite"
replication_factor = 1
compression_level = "none"
rpc_bind_addr = "127.0.0.1:$_S3_RPC_PORT"
rpc_public_addr = "127.0.0.1:$_S3_RPC_PORT"
rpc_secret_file = "$BERTH_S3_DIR/rpc_secret"

[s3_api]
s3_region = "$BERTH_S3_REGION"
api_bind_addr = "127.0.0.1:$BERTH_S3_PORT"
TOML
  if ! cmp -s "$BERTH_S3_DIR/garage.toml.new" "$BERTH_S3_DIR/garage.toml"; then
    mv "$BERTH_S3_DIR/garage.toml.new" "$BERTH_S3_DIR/garage.toml"
    if is_running garage; then
      log "s3: configuration changed; restarting Garage"
      stop_bg garage 15
    fi
  else
    rm -f "$BERTH_S3_DIR/garage.toml.new"
  fi
}

# True when the stack runs the store: built already, or asked for.
s3_wanted() { [[ -x "$_GARAGE" || "${BERTH_STACK_S3:-}" == 1 ]]; }

up_s3() {
  s3_wanted || return 0
  ensure_packages openssl:openssl curl:curl
  _garage_build
  _garage_config
  if is_running garage; then
    log "s3: running"
    return 0
  fi
  port_in_use "$BERTH_S3_PORT" && die "s3: port $BERTH_S3_PORT is already in use by another process"
  log "s3: starting Garage on 127.0.0.1:$BERTH_S3_PORT (bucket $BERTH_S3_BUCKET)"
  start_bg garage "$LOGS/garage.log" "$_GARAGE" -c "$BERTH_S3_DIR/garage.toml" server
}

# The layout (this node, 1 GB), the key and the bucket, each made once.
_garage_setup() {
  local node
  if ! _garage layout show 2>/dev/null | grep -q "dc1"; then
    node=$(_garage node id -q 2>/dev/null | cut -d@ -f1)
    [[ -n "$node" ]] || return 1
    _garage layout assign -z dc1 -c 1G "$node" >/dev/null &&
      _garage layout apply --version 1 >/dev/null || return 1
  fi
  if ! _garage key info "$BERTH_S3_ACCESS_KEY_ID" >/dev/null 2>&1; then
    _garage key import --yes -n berth-stack "$BERTH_S3_ACCESS_KEY_ID" "$BERTH_S3_SECRET_ACCESS_KEY" >/dev/null || return 1
  fi
  if ! _garage bucket info "$BERTH_S3_BUCKET" >/dev/null 2>&1; then
    _garage bucket create "$BERTH_S3_BUCKET" >/dev/null || return 1
  fi
  _garage bucket allow --read --write --owner "$BERTH_S3_BUCKET" --key "$BERTH_S3_ACCESS_KEY_ID" >/dev/null
}

_garage_answers() { [[ -f "$BERTH_S3_DIR/garage.toml" ]] && _garage status >/dev/null 2>&1; }

s3_ready() {
  _garage_answers && _garage bucket info "$BERTH_S3_BUCKET" >/dev/null 2>&1
}

wait_s3() {
  s3_wanted || return 0
  wait_for 30 "Garage on 127.0.0.1:$BERTH_S3_PORT (log: $LOGS/garage.log)" _garage_answers
  wait_for 30 "Garage's layout, key and bucket (log: $LOGS/garage.log)" _garage_setup
}

down_s3() {
  if is_running garage; then
    log "s3: stopping Garage"
    stop_bg garage 15
  else
    log "s3: not running"
  fi
}

s3_env() {
  cat <<ENV
export BERTH_S3_ENDPOINT=http://127.0.0.1:$BERTH_S3_PORT
export BERTH_S3_BUCKET=$BERTH_S3_BUCKET
export BERTH_S3_REGION=$BERTH_S3_REGION
export BERTH_S3_ACCESS_KEY_ID=$BERTH_S3_ACCESS_KEY_ID
export BERTH_S3_SECRET_ACCESS_KEY=$BERTH_S3_SECRET_ACCESS_KEY
export BERTH_S3_DATA_DIR=$(printf %q "$BERTH_S3_DIR/data")
ENV
}
