# shellcheck shell=bash
# Berth's own images, built from the binaries cargo left in the target dir, without pulling
# anything (no registry is reachable here). Source after common.sh and images.sh (it uses
# _docker_build, _fresh and _image_hash); needs `docker`, `ldd` and `strip`.
#
#   berth/runtime:<hash>     FROM scratch: the shared libraries and loader the binaries link
#                            (ldd), the CA bundle, /etc/passwd and /etc/group with nonroot
#                            65532, /tmp (1777), /var/lib/berth and /home/nonroot (65532);
#                            USER 65532:65532 — what gcr.io/distroless/cc-debian12:nonroot holds
#   berth/controller:TAG     stripped berth-controller on it; ENTRYPOINT berth-controller, CMD run
#   berth/shim:TAG           stripped berth-shim on it; serves without arguments
#
#   ensure_berth_images PROFILE TAG   PROFILE debug|release: $CARGO_TARGET_DIR/PROFILE/berth-*
#
# Each image is labelled with the hash of its inputs (local.berth-stack.source-hash, so the
# prune in ensure_images covers it) and skipped when fresh. These are the images to publish
# (`docker tag` and `docker push`): the in-cluster test runs this layout.

BERTH_RUNTIME_REPO=berth/runtime
BERTH_IMAGE_BINARIES=(berth-controller berth-shim)

ensure_berth_images() {
  local profile=${1:-debug} tag=${2:-dev}
  [[ "$profile" == debug || "$profile" == release ]] || die "profile must be debug or release, not $profile"
  local dir=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}/$profile bin bins=()
  for bin in "${BERTH_IMAGE_BINARIES[@]}"; do
    [[ -x "$dir/$bin" ]] || die "missing $dir/$bin (cargo build --bins, with --release for release)"
    bins+=("$dir/$bin")
  done
  ensure_berth_runtime_image "${bins[@]}"
  _berth_binary_image "$dir/berth-controller" "berth/controller:$tag" \
    'ENTRYPOINT ["/usr/bin/berth-controller"]' 'CMD ["run"]'
  _berth_binary_image "$dir/berth-shim" "berth/shim:$tag" \
    'ENTRYPOINT ["/usr/bin/berth-shim"]'
}

# ensure_berth_runtime_image BINARY... — the base image for these binaries, named (by the hash
# of its inputs) in BERTH_RUNTIME_IMAGE.
ensure_berth_runtime_image() {
  local libs lib hash image
  mapfile -t libs < <(_berth_libs "$@")
  hash=$(
    {
      for lib in "${libs[@]}" /etc/ssl/certs/ca-certificates.crt; do
        echo "$lib"
        sha256sum <"$lib"
      done
      declare -f _berth_runtime_rootfs ensure_berth_runtime_image
    } | sha256sum | cut -c1-16
  )
  image=$BERTH_RUNTIME_REPO:$hash
  if _fresh "$image" "$hash"; then
    log "image $image: present"
    BERTH_RUNTIME_IMAGE=$image
    return 0
  fi
  log "image $image: building from ${libs[*]}"
  local ctx
  ctx=$(mktemp -d)
  _berth_runtime_rootfs "$ctx" "${libs[@]}"
  # COPY makes everything root's: the two directories the user writes to are copied apart.
  cat >"$ctx/Dockerfile" <<EOF
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 owned/ /var/lib/berth/
COPY --chown=65532:65532 owned/ /home/nonroot/
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL local.berth-stack.source-hash=$hash org.opencontainers.image.title="berth runtime"
USER 65532:65532
EOF
  _docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
  BERTH_RUNTIME_IMAGE=$image
}

# _berth_libs BINARY... — every library and loader path ldd prints for the binaries, once.
_berth_libs() {
  local bin
  for bin in "$@"; do
    file_is_static "$bin" && continue
    # "name => /path (addr)" for libraries, "/path (addr)" for the loader; vdso has no path.
    LC_ALL=C ldd "$bin" | grep -o '/[^ ]*'
  done | LC_ALL=C sort -u
}

# _berth_runtime_rootfs CTX LIB... — CTX/rootfs (root's files) and CTX/owned (empty, 65532's).
_berth_runtime_rootfs() {
  local ctx=$1 lib
  shift
  local root=$ctx/rootfs
  mkdir -p "$root"/{etc/ssl/certs,tmp,var/lib,home} "$ctx/owned"
  chmod 1777 "$root/tmp"
  for lib in "$@"; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' 'nonroot:x:65532:' >"$root/etc/group"
  echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
}

# _berth_binary_image BINARY IMAGE INSTRUCTION... — BINARY, stripped, on BERTH_RUNTIME_IMAGE.
# The revision label is the checkout's commit when the image is built; it is not part of the
# hash, so an unchanged binary keeps its image (and label) across commits.
_berth_binary_image() {
  local runtime=$BERTH_RUNTIME_IMAGE bin=$1 image=$2 name hash revision
  shift 2
  name=$(basename "$bin")
  hash=$(
    {
      sha256sum <"$bin"
      echo "$runtime" "$@"
      declare -f _berth_binary_image
    } | sha256sum | cut -c1-16
  )
  if _fresh "$image" "$hash"; then
    log "image $image: present"
    return 0
  fi
  revision=$(git -C "$BERTH_REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
  log "image $image: building from $bin (checkout at ${revision:0:12})"
  if (($(stat -c %Y "$bin") < $(git -C "$BERTH_REPO_ROOT" log -1 --format=%ct 2>/dev/null || echo 0))); then
    warn "$bin is older than commit ${revision:0:12}, which the image's revision label names"
  fi
  local ctx
  ctx=$(mktemp -d)
  strip --strip-all -o "$ctx/$name" "$bin"
  {
    echo "FROM $runtime"
    echo "COPY $name /usr/bin/$name"
    printf '%s\n' "$@"
    echo "LABEL local.berth-stack.source-hash=$hash org.opencontainers.image.title=$name" \
      "org.opencontainers.image.revision=$revision"
  } >"$ctx/Dockerfile"
  _docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
}
