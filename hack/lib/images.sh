# shellcheck shell=bash
# Local images for the stack, built without pulling anything (no registry is reachable here).
# Source after common.sh; needs a working `docker`. Each ensure_* function is a no-op when the
# tag exists and was built from the same inputs (a hash kept in the label local.berth-stack.source-hash).
#
#   berth/busybox:1        rootfs from Debian's busybox-static, `docker import`ed
#   berth/sample-app:1,2   examples/apps/sample-app on top of berth/busybox:1
#   berth/edge-caddy:2.6.2 Debian's caddy binary plus the libraries it links, on berth/busybox:1

BERTH_REPO_ROOT=${BERTH_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BERTH_BUSYBOX_IMAGE=berth/busybox:1
BERTH_SAMPLE_REPO=berth/sample-app
BERTH_SAMPLE_VERSIONS=(1 2)
BERTH_EDGE_IMAGE=berth/edge-caddy:2.6.2

# The docker CLI here has no buildx plugin, so BuildKit is unavailable: use the legacy builder.
# Its output (and deprecation notice) is shown only when the build fails.
_docker_build() {
  local out
  if ! out=$(DOCKER_BUILDKIT=0 docker build "$@" 2>&1); then
    echo "$out" >&2
    die "docker build $* failed"
  fi
}

_image_hash() { docker image inspect -f '{{index .Config.Labels "local.berth-stack.source-hash"}}' "$1" 2>/dev/null; }

# _fresh IMAGE HASH — the image exists and was built from inputs with this hash.
_fresh() { [[ "$(_image_hash "$1")" == "$2" ]]; }

# _hash_of FILE... — one hash over the names and contents of the given files (dirs recurse).
_hash_of() {
  local f
  for f in $(find "$@" -type f | LC_ALL=C sort); do
    echo "${f#"$BERTH_REPO_ROOT"/}"
    sha256sum <"$f"
  done | sha256sum | cut -c1-16
}

ensure_busybox_image() {
  ensure_packages busybox:busybox-static
  local bb hash
  bb=$(_static_busybox)
  hash=$(sha256sum <"$bb" | cut -c1-16)
  if _fresh "$BERTH_BUSYBOX_IMAGE" "$hash"; then
    log "image $BERTH_BUSYBOX_IMAGE: present"
    return 0
  fi
  log "image $BERTH_BUSYBOX_IMAGE: building from $bb"
  local root
  root=$(mktemp -d)
  _busybox_rootfs "$root" "$bb"
  tar -C "$root" -c . | docker import \
    -c "LABEL local.berth-stack.source-hash=$hash" \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/sh"]' - "$BERTH_BUSYBOX_IMAGE" >/dev/null
  rm -rf "$root"
}

# Debian's busybox-static puts its binary at /bin/busybox; make sure it is the static one, since
# the image has no libc.
_static_busybox() {
  local bb=/bin/busybox
  if ! file_is_static "$bb"; then
    die "$bb is not statically linked (install busybox-static rather than busybox)"
  fi
  echo "$bb"
}

file_is_static() { ! LC_ALL=C ldd "$1" >/dev/null 2>&1; }

# _busybox_rootfs DIR BUSYBOX — a minimal root filesystem: busybox with a symlink per applet.
_busybox_rootfs() {
  local root=$1 bb=$2 applet
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root,run}
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  # Same result as `busybox --install -s /bin`, without needing to chroot.
  for applet in $("$bb" --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$root/bin/$applet"
  done
  ln -sf ../../bin/env "$root/usr/bin/env"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
    >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
}

ensure_sample_images() {
  local dir=$BERTH_REPO_ROOT/examples/apps/sample-app v hash
  [[ -f "$dir/Dockerfile" ]] || die "missing $dir/Dockerfile"
  hash=$(_hash_of "$dir")-$(_image_hash "$BERTH_BUSYBOX_IMAGE")
  for v in "${BERTH_SAMPLE_VERSIONS[@]}"; do
    if _fresh "$BERTH_SAMPLE_REPO:$v" "$hash"; then
      log "image $BERTH_SAMPLE_REPO:$v: present"
      continue
    fi
    log "image $BERTH_SAMPLE_REPO:$v: building from examples/apps/sample-app"
    _docker_build --build-arg "VERSION=$v" --label "local.berth-stack.source-hash=$hash" \
      -t "$BERTH_SAMPLE_REPO:$v" "$dir"
  done
}

ensure_edge_image() {
  ensure_packages caddy:caddy
  local caddy hash
  caddy=$(readlink -f "$(command -v caddy)")
  hash=$(
    {
      sha256sum <"$caddy"
      declare -f _edge_rootfs ensure_edge_image
      _image_hash "$BERTH_BUSYBOX_IMAGE"
    } | sha256sum | cut -c1-16
  )
  if _fresh "$BERTH_EDGE_IMAGE" "$hash"; then
    log "image $BERTH_EDGE_IMAGE: present"
    return 0
  fi
  log "image $BERTH_EDGE_IMAGE: building from $caddy"
  local ctx
  ctx=$(mktemp -d)
  _edge_rootfs "$ctx/rootfs" "$caddy"
  # Caddy's storage (certificates, autosave) lives under $XDG_DATA_HOME and $XDG_CONFIG_HOME.
  # The default config only opens the admin endpoint on a unix socket in /run/caddy (mount a host
  # directory there); Berth loads the real config through it (DESIGN §5).
  cat >"$ctx/Dockerfile" <<EOF
FROM $BERTH_BUSYBOX_IMAGE
COPY rootfs/ /
ENV XDG_CONFIG_HOME=/config XDG_DATA_HOME=/data
LABEL local.berth-stack.source-hash=$hash org.opencontainers.image.title="berth edge caddy"
EXPOSE 80 443
WORKDIR /srv
ENTRYPOINT ["caddy"]
CMD ["run", "--config", "/etc/caddy/config.json"]
EOF
  _docker_build -t "$BERTH_EDGE_IMAGE" "$ctx"
  rm -rf "$ctx"
}

# _edge_rootfs DIR CADDY — caddy, the shared libraries and loader it links (Debian's build is
# dynamic), the CA bundle, and a default config.
_edge_rootfs() {
  local root=$1 caddy=$2 lib
  mkdir -p "$root"/{usr/bin,etc/caddy,etc/ssl/certs,config,data,srv,run/caddy}
  cp "$caddy" "$root/usr/bin/caddy"
  # ldd prints "name => /path (addr)" for libraries and "/path (addr)" for the loader.
  for lib in $(LC_ALL=C ldd "$caddy" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
  cat >"$root/etc/caddy/config.json" <<'EOF'
{"admin": {"listen": "unix//run/caddy/admin.sock"}}
EOF
}

ensure_images() {
  ensure_busybox_image
  ensure_sample_images
  ensure_edge_image
  # A rebuild leaves the previous image untagged; drop those (only ours, by label).
  docker image prune -f --filter label=local.berth-stack.source-hash >/dev/null
}
