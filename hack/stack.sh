#!/usr/bin/env bash
# The local stack Berth develops and tests against (DESIGN §7), all on loopback:
# etcd, kube-apiserver, kube-controller-manager, a Docker engine, an sshd acting as a "server",
# a second "server" in its own network namespace (sshd and dockerd), PostgreSQL, Pebble (ACME),
# a git server, an SMTP server, and locally built images.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# Callers holding the integration lock on fd 9 (hack/test.sh, hack/chaos.sh, tests restarting a
# daemon) must not pass it on to the daemons started here: a dockerd or sshd that inherits it
# holds the lock for as long as it lives and every later test run waits forever.
exec 9>&-

HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_REPO_ROOT BERTH_LOG_PREFIX=stack
BERTH_REPO_ROOT=$(cd "$HACK_DIR/.." && pwd)
source "$HACK_DIR/lib/common.sh"
source "$HACK_DIR/lib/images.sh"
source "$HACK_DIR/lib/registry.sh"
source "$HACK_DIR/lib/postgres.sh"
source "$HACK_DIR/lib/pebble.sh"
source "$HACK_DIR/lib/git-server.sh"
source "$HACK_DIR/lib/smtp.sh"
source "$HACK_DIR/lib/s3.sh"

D=$BERTH_STACK_DIR
LOGS=$D/logs
PKI=$D/pki
SSH_DIR=$D/ssh
ETCD_PORT=23790
ETCD_PEER_PORT=23800
API_PORT=16443
CM_PORT=10257
SSH_PORT=2222
DOCKER_SOCKET=/var/run/docker.sock
APISERVER_BIN=$BERTH_CACHE/bin/kube-apiserver
CONTROLLER_MANAGER_BIN=$BERTH_CACHE/bin/kube-controller-manager
KUBECONFIG_FILE=$D/kubeconfig
source "$HACK_DIR/lib/servers.sh"
source "$HACK_DIR/lib/node.sh"

usage() {
  cat <<EOF
Usage: hack/stack.sh up|down|status|env|restart docker|sshd|apiserver|smtp|cut-srv2|restore-srv2|node up|down|status

Runs Berth's local development stack on loopback (DESIGN §7):
  etcd                     127.0.0.1:$ETCD_PORT (peer $ETCD_PEER_PORT)
  kube-apiserver           https://127.0.0.1:$API_PORT (kubeconfig: \$BERTH_STACK_DIR/kubeconfig)
  kube-controller-manager  https://127.0.0.1:$CM_PORT/healthz (controllers: namespace, garbagecollector)
  docker                   $DOCKER_SOCKET (an already running engine is reused)
  sshd                     root@127.0.0.1:$SSH_PORT (key: \$BERTH_STACK_DIR/ssh/id_ed25519)
  server 2                 network namespace $SRV2_NS: sshd root@$SRV2_ADDR:$SRV2_SSH_PORT (same key,
                           its own host key), dockerd on $SRV2_DOCKER_SOCKET
  registry                 http://$BERTH_REGISTRY_ADDR (htpasswd auth; credentials: \$BERTH_STACK_DIR/registry.env),
                           holding $BERTH_REGISTRY_SAMPLE_REPO:{${BERTH_SAMPLE_VERSIONS[*]}}, berth/postgres and berth/redis
  postgres                 127.0.0.1:$BERTH_POSTGRES_PORT, database $BERTH_POSTGRES_DB (password: \$BERTH_STACK_DIR/postgres.env;
                           URL: BERTH_TEST_POSTGRES_URL in 'env'), Debian's postgresql
  pebble                   https://127.0.0.1:$BERTH_PEBBLE_PORT/dir (ACME; directory trusted with \$BERTH_STACK_DIR/pki/ca.crt,
                           issuing root in \$BERTH_STACK_DIR/pebble/root.pem; certificates live ${BERTH_PEBBLE_CERT_VALIDITY}s;
                           HTTP-01 checked on port $BERTH_PEBBLE_HTTP_PORT; orders for $BERTH_PEBBLE_BLOCKED_DOMAIN refused)
  git                      bare repositories in \$BERTH_STACK_DIR/git/repos over http://127.0.0.1:$BERTH_GIT_HTTP_PORT/git,
                           git://127.0.0.1:$BERTH_GIT_DAEMON_PORT and SSH (deploy key \$BERTH_STACK_DIR/ssh/git_deploy_ed25519)
  pebble-challtestsrv      DNS 127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT (every name: 127.0.0.1), management http://127.0.0.1:$BERTH_CHALLTESTSRV_MANAGEMENT_PORT
  smtp                     127.0.0.1:$BERTH_SMTP_PORT (Debian's python3-aiosmtpd, hack/lib/smtp_server.py): STARTTLS
                           with a certificate for localhost and 127.0.0.1 from \$BERTH_STACK_DIR/smtp/ca.pem;
                           AUTH PLAIN/LOGIN after STARTTLS only, user $BERTH_SMTP_USERNAME; mail also taken
                           without AUTH or TLS; each message a file in \$BERTH_STACK_DIR/smtp/mail/new
                           (BERTH_SMTP_* in 'env')
  s3                       http://127.0.0.1:$BERTH_S3_PORT, Garage (built once into \$BERTH_CACHE), bucket $BERTH_S3_BUCKET,
                           region $BERTH_S3_REGION, one key (BERTH_S3_* in 'env'); data uncompressed in \$BERTH_STACK_DIR/garage/data
  images                   $BERTH_BUSYBOX_IMAGE, ${BERTH_SAMPLE_VERSIONS[*]/#/$BERTH_SAMPLE_REPO:}, $BERTH_EDGE_IMAGE

Commands:
  up      install what is missing, build what is not cached, start what is not running
  down    stop what 'up' started (an engine it reused is left alone)
  status  print each component up/down; exit 1 if any is down
  env     print export lines for the stack: eval "\$(hack/stack.sh env)"
  restart docker|sshd|apiserver|smtp
          restart dockerd (its containers stop and come back by their restart policy), sshd
          (the listener and every open connection), kube-apiserver (every watch and request
          in flight), as fault tests do, or the SMTP server (its connections end; delivered
          mail stays)
  node up|down|status
          a real node on top of the running stack (hack/lib/node.sh): kubelet with dockershim
          on this Docker, kube-scheduler and kube-proxy; node $NODE_IP ($NODE_IF), pods in
          $NODE_POD_CIDR, Services in $SERVICE_CIDR. The API server and
          kube-controller-manager restart with what pods need (tokens, endpoints, Deployments);
          'node down' stops it all and returns them to loopback only. Take the integration lock
          (\$BERTH_STACK_DIR/integration.lock) first when tests may be running.
  cut-srv2 / restore-srv2
          take server 2's end of its veth pair down (a silent network partition: packets to
          it are dropped, connections hang) / bring it back up (idempotent)

State (certificates, keys, etcd data, logs, pid files) lives in
  BERTH_STACK_DIR=$D
EOF
}

# ---- helpers ------------------------------------------------------------------------------

port_in_use() { [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]; }

# check_ports — before starting anything: a port held by something that is not ours is a
# conflict that would otherwise surface as an obscure startup failure in a component's log.
check_ports() {
  local spec name port
  for spec in etcd:$ETCD_PORT etcd:$ETCD_PEER_PORT kube-apiserver:$API_PORT \
    kube-controller-manager:$CM_PORT sshd:$SSH_PORT registry:${BERTH_REGISTRY_ADDR##*:} \
    pebble:$BERTH_PEBBLE_PORT pebble:$BERTH_PEBBLE_MANAGEMENT_PORT \
    challtestsrv:$BERTH_CHALLTESTSRV_DNS_PORT challtestsrv:$BERTH_CHALLTESTSRV_MANAGEMENT_PORT \
    git-http:$BERTH_GIT_HTTP_PORT git-daemon:$BERTH_GIT_DAEMON_PORT smtp:$BERTH_SMTP_PORT garage:$BERTH_S3_PORT; do
    name=${spec%%:*} port=${spec#*:}
    if ! is_running "$name" && port_in_use "$port"; then
      die "$name: port $port on loopback is already in use by another process"
    fi
  done
}

kubectl_stack() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }

etcd_healthy() { curl -fs --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
apiserver_ready() { [[ "$(kubectl_stack get --raw /readyz 2>/dev/null)" == ok ]]; }
# /healthz is served to anonymous clients (the controller-manager's always-allowed path).
controller_manager_ready() {
  [[ "$(curl -fsk --max-time 2 "https://127.0.0.1:$CM_PORT/healthz" 2>/dev/null)" == ok ]]
}
docker_ready() { docker -H "unix://$DOCKER_SOCKET" info >/dev/null 2>&1; }
images_present() {
  local img
  for img in "$BERTH_BUSYBOX_IMAGE" "${BERTH_SAMPLE_VERSIONS[@]/#/$BERTH_SAMPLE_REPO:}" "$BERTH_EDGE_IMAGE"; do
    docker image inspect "$img" >/dev/null 2>&1 || return 1
  done
}

# ---- packages, certificates and the kubeconfig --------------------------------------------

install_packages() {
  ensure_packages etcd:etcd-server dockerd:docker.io docker:docker.io /usr/sbin/sshd:openssh-server \
    ssh:openssh-client caddy:caddy busybox:busybox-static openssl:openssl curl:curl jq:jq \
    ss:iproute2 ip:iproute2 setsid:util-linux flock:util-linux nsenter:util-linux
  command -v kubectl >/dev/null || die "kubectl not found (expected at /usr/bin/kubectl)"
}

# Keys and certificates are generated once and kept, so restarts keep the same identities.
ensure_pki() {
  mkdir -p "$PKI" && chmod 700 "$PKI"
  if [[ ! -f "$PKI/ca.crt" ]]; then
    log "pki: generating a CA and the API server's serving certificate"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=berth-local-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
    rm -f "$PKI/apiserver.crt"
  fi
  # Certificates from before the Service range moved to $SERVICE_CIDR lack its first address.
  if [[ -f "$PKI/apiserver.crt" ]] &&
    ! openssl x509 -in "$PKI/apiserver.crt" -noout -text | grep -q "IP Address:$SERVICE_KUBERNETES_IP"; then
    log "pki: renewing the API server's certificate for $SERVICE_KUBERNETES_IP and $NODE_IP"
    rm -f "$PKI/apiserver.crt"
  fi
  if [[ ! -f "$PKI/apiserver.crt" ]]; then
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver" \
      -keyout "$PKI/apiserver.key" -out "$PKI/apiserver.csr" 2>/dev/null
    openssl x509 -req -in "$PKI/apiserver.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
      -CAcreateserial -days 3650 -out "$PKI/apiserver.crt" -extfile <(
        echo "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:$SERVICE_KUBERNETES_IP,IP:$NODE_IP"
        echo "extendedKeyUsage=serverAuth"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
      ) 2>/dev/null
    rm -f "$PKI/apiserver.csr"
  fi
  if [[ ! -f "$PKI/sa.key" ]]; then
    log "pki: generating the service-account signing key"
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  if [[ ! -f "$PKI/tokens.csv" ]]; then
    log "pki: generating the admin token (group system:masters)"
    (umask 077 && echo "$(openssl rand -hex 32),berth-admin,berth-admin,\"system:masters\"" >"$PKI/tokens.csv")
  fi
  write_kubeconfig
}

write_kubeconfig() {
  local token ca tmp
  token=$(cut -d, -f1 "$PKI/tokens.csv")
  ca=$(base64 -w0 <"$PKI/ca.crt")
  tmp=$(mktemp "$D/.kubeconfig.XXXXXX")
  cat >"$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-local
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $ca
users:
- name: berth-admin
  user:
    token: $token
contexts:
- name: berth-local
  context:
    cluster: berth-local
    user: berth-admin
current-context: berth-local
EOF
  chmod 600 "$tmp"
  if cmp -s "$tmp" "$KUBECONFIG_FILE" 2>/dev/null; then rm -f "$tmp"; else mv "$tmp" "$KUBECONFIG_FILE"; fi
}

# ---- components ---------------------------------------------------------------------------

up_etcd() {
  if is_running etcd; then
    log "etcd: running"
    return 0
  fi
  log "etcd: starting on 127.0.0.1:$ETCD_PORT"
  mkdir -p "$D/etcd" && chmod 700 "$D/etcd"
  start_bg etcd "$LOGS/etcd.log" etcd --name berth \
    --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "berth=http://127.0.0.1:$ETCD_PEER_PORT"
}

wait_etcd() { wait_for 30 "etcd health (log: $LOGS/etcd.log)" etcd_healthy; }

build_kubernetes() {
  if [[ ! -x "$APISERVER_BIN" ]]; then
    log "kube-apiserver, kube-controller-manager: building from Debian's source package (about 6 minutes, once)"
  elif [[ ! -x "$CONTROLLER_MANAGER_BIN" ]]; then
    log "kube-controller-manager: building from Debian's source package (about 1 minute, once)"
  fi
  # The lock keeps two concurrent 'up's from compiling into the same tree. Its name dates from
  # when only the API server was built; it is kept so that older checkouts exclude this one too.
  mkdir -p "$BERTH_CACHE"
  flock "$BERTH_CACHE/.build-apiserver.lock" "$HACK_DIR/lib/build-kubernetes.sh" \
    kube-apiserver kube-controller-manager >&2
}

up_apiserver() {
  if is_running kube-apiserver; then
    log "kube-apiserver: running"
    return 0
  fi
  log "kube-apiserver: starting on https://127.0.0.1:$API_PORT ($(_wanted_mode) mode)"
  mkdir -p "$PKI/apiserver-certs"
  local mode_flags
  mapfile -t mode_flags < <(apiserver_mode_flags)
  record_mode kube-apiserver
  start_bg kube-apiserver "$LOGS/kube-apiserver.log" "$APISERVER_BIN" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    "${mode_flags[@]}" \
    --secure-port "$API_PORT" \
    --insecure-port 0 \
    --cert-dir "$PKI/apiserver-certs" \
    --tls-cert-file "$PKI/apiserver.crt" \
    --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --token-auth-file "$PKI/tokens.csv" \
    --authorization-mode RBAC \
    --service-account-key-file "$PKI/sa.pub" \
    --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --api-audiences https://kubernetes.default.svc \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --allow-privileged=true \
    --profiling=false
}

wait_apiserver() {
  wait_for 90 "kube-apiserver /readyz (log: $LOGS/kube-apiserver.log)" apiserver_ready
}

# Only the controllers the stack's users need: namespace (a deleted namespace is emptied and
# removed instead of staying Terminating) and garbagecollector (ownerReferences). It acts as the
# admin identity of the stack's kubeconfig (system:masters), and serves /healthz on loopback only.
# --authentication-skip-lookup with --client-ca-file: otherwise it reads the request-header CA
# from kube-system/extension-apiserver-authentication, which this API server does not publish,
# and logs an error about it every few seconds.
up_controller_manager() {
  if is_running kube-controller-manager; then
    log "kube-controller-manager: running"
    return 0
  fi
  log "kube-controller-manager: starting ($(_wanted_mode) mode)"
  local mode_flags
  mapfile -t mode_flags < <(controller_manager_mode_flags)
  record_mode kube-controller-manager
  start_bg kube-controller-manager "$LOGS/kube-controller-manager.log" "$CONTROLLER_MANAGER_BIN" \
    --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" \
    --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --authentication-skip-lookup \
    --client-ca-file "$PKI/ca.crt" \
    --bind-address 127.0.0.1 \
    --secure-port "$CM_PORT" \
    --port 0 \
    --leader-elect=false \
    "${mode_flags[@]}" \
    --profiling=false
}

wait_controller_manager() {
  wait_for 30 "kube-controller-manager /healthz (log: $LOGS/kube-controller-manager.log)" \
    controller_manager_ready
}

ensure_namespace() {
  if kubectl_stack get namespace berth-system >/dev/null 2>&1; then
    return 0
  fi
  log "kube-apiserver: creating namespace berth-system"
  kubectl_stack create namespace berth-system >/dev/null
}

# Returns with dockerd started (or reused); wait_docker waits for it.
up_docker() {
  if docker_ready; then
    if is_running dockerd; then log "docker: running"; else log "docker: reusing the engine on $DOCKER_SOCKET"; fi
    return 0
  fi
  if is_running dockerd; then
    log "docker: started earlier, waiting for it"
    return 0
  fi
  if [[ -f /var/run/docker.pid ]] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    die "docker: a dockerd (pid $(cat /var/run/docker.pid)) is running but not answering on $DOCKER_SOCKET"
  fi
  log "docker: starting dockerd"
  # The defaults work here (overlay2, iptables, cgroupfs); dockerd starts its own containerd.
  start_bg dockerd "$LOGS/dockerd.log" dockerd --host "unix://$DOCKER_SOCKET" \
    --default-address-pool "$DOCKER_NETWORK_POOL"
}

wait_docker() { wait_for 60 "dockerd (log: $LOGS/dockerd.log)" docker_ready; }

# Berth's edge network made when the pool cut /24s holds 253 apps; `hack/bench.sh scale` needs
# more. It is removed (Berth makes it again, from the pool) while no container uses it.
widen_edge_network() {
  local subnet size=${DOCKER_NETWORK_POOL##*size=} users
  subnet=$(docker network inspect berth-edge -f '{{(index .IPAM.Config 0).Subnet}}' 2>/dev/null) || return 0
  (( ${subnet##*/} > size )) || return 0
  users=$(docker network inspect berth-edge -f '{{len .Containers}}')
  if (( users > 0 )); then
    warn "docker: berth-edge is $subnet (at most 253 apps) and $users containers use it; remove them and the network to have a /$size"
    return 0
  fi
  docker network rm berth-edge >/dev/null && log "docker: removed berth-edge ($subnet); Berth makes it again as a /$size"
}

# ---- commands -----------------------------------------------------------------------------

cmd_up() {
  local start=$SECONDS
  mkdir -p "$D" "$LOGS"
  install_packages
  ensure_pki
  ensure_ssh_keys
  check_ports
  # Independent pieces start first, so their startup overlaps with the API server build/start.
  up_etcd
  up_docker
  up_sshd
  up_srv2
  up_registry
  up_postgres
  up_pebble
  up_git_server
  up_smtp
  up_s3
  build_kubernetes
  wait_etcd
  up_apiserver
  wait_docker
  widen_edge_network
  ensure_images
  wait_registry
  ensure_registry_images
  wait_postgres
  wait_pebble
  wait_git_server
  wait_smtp
  wait_s3
  wait_sshd
  wait_srv2
  wait_apiserver
  up_controller_manager
  ensure_namespace
  wait_controller_manager
  log "up in $((SECONDS - start))s; use: eval \"\$(hack/stack.sh env)\""
}

cmd_down() {
  local name
  if node_mode || is_running kubelet; then cmd_node_down; fi
  # Reverse dependency order; only what start_bg started is touched.
  for name in kube-controller-manager kube-apiserver etcd registry git-http git-daemon srv2-sshd srv2-dockerd sshd dockerd; do
    if is_running "$name"; then
      log "$name: stopping"
      # dockerd stops its containers first (up to its own 15 s shutdown timeout).
      stop_bg "$name" 40
    else
      log "$name: not running"
      rm -f "$D/$name.pid"
    fi
  done
  if srv2_netns_present; then
    log "server 2: deleting network namespace $SRV2_NS"
    ip netns del "$SRV2_NS"
  fi
  down_postgres
  down_pebble
  down_smtp
  down_s3
  if docker_ready; then log "docker: engine not started by this script, left running"; fi
}

cmd_status() {
  local bad=0
  report() {
    local name=$1 ok=$2 detail=$3
    if [[ "$ok" == 1 ]]; then
      printf '%-24s up    %s\n' "$name" "$detail"
    else
      printf '%-24s down  %s\n' "$name" "$detail"
      bad=1
    fi
  }
  pid_of() { if is_running "$1"; then echo "pid $(cut -d' ' -f1 "$D/$1.pid")"; else echo "not started here"; fi; }
  if etcd_healthy; then report etcd 1 "127.0.0.1:$ETCD_PORT, $(pid_of etcd)"; else report etcd 0 "127.0.0.1:$ETCD_PORT"; fi
  if apiserver_ready; then
    report kube-apiserver 1 "https://127.0.0.1:$API_PORT, $(pid_of kube-apiserver)"
  else
    report kube-apiserver 0 "https://127.0.0.1:$API_PORT"
  fi
  if controller_manager_ready; then
    report kube-controller-manager 1 "https://127.0.0.1:$CM_PORT/healthz, $(pid_of kube-controller-manager)"
  else
    report kube-controller-manager 0 "https://127.0.0.1:$CM_PORT/healthz"
  fi
  if docker_ready; then report docker 1 "$DOCKER_SOCKET, $(pid_of dockerd)"; else report docker 0 "$DOCKER_SOCKET"; fi
  if [[ -f "$SSH_DIR/id_ed25519" ]] && ssh_ok 2>/dev/null; then
    report sshd 1 "root@127.0.0.1:$SSH_PORT, $(pid_of sshd)"
  else
    report sshd 0 "root@127.0.0.1:$SSH_PORT"
  fi
  if srv2_netns_present && ssh2_ok 2>/dev/null && docker2_ready; then
    report "server 2" 1 "root@$SRV2_ADDR:$SRV2_SSH_PORT in netns $SRV2_NS, docker $SRV2_DOCKER_SOCKET"
  else
    report "server 2" 0 "root@$SRV2_ADDR:$SRV2_SSH_PORT in netns $SRV2_NS"
  fi
  if registry_ready; then
    report registry 1 "http://$BERTH_REGISTRY_ADDR, $(pid_of registry)"
  else
    report registry 0 "http://$BERTH_REGISTRY_ADDR"
  fi
  local pg_pid
  pg_pid=$(postgres_pid)
  if postgres_ready; then
    report postgres 1 "127.0.0.1:$BERTH_POSTGRES_PORT/$BERTH_POSTGRES_DB${pg_pid:+, pid $pg_pid}"
  else
    report postgres 0 "127.0.0.1:$BERTH_POSTGRES_PORT/$BERTH_POSTGRES_DB"
  fi
  if pebble_ready && challtestsrv_ready; then
    report pebble 1 "https://127.0.0.1:$BERTH_PEBBLE_PORT/dir, DNS 127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT, $(pid_of pebble)"
  else
    report pebble 0 "https://127.0.0.1:$BERTH_PEBBLE_PORT/dir, DNS 127.0.0.1:$BERTH_CHALLTESTSRV_DNS_PORT"
  fi
  if git_server_ready; then
    report git 1 "http://127.0.0.1:$BERTH_GIT_HTTP_PORT/git, git://127.0.0.1:$BERTH_GIT_DAEMON_PORT, ssh (deploy key)"
  else
    report git 0 "http://127.0.0.1:$BERTH_GIT_HTTP_PORT/git, git://127.0.0.1:$BERTH_GIT_DAEMON_PORT"
  fi
  if smtp_ready; then
    report smtp 1 "127.0.0.1:$BERTH_SMTP_PORT (STARTTLS), mail in $BERTH_SMTP_MAILDIR/new, $(pid_of smtp)"
  else
    report smtp 0 "127.0.0.1:$BERTH_SMTP_PORT"
  fi
  if ! s3_wanted; then
    printf '%-24s off   %s\n' s3 "not built (BERTH_STACK_S3=1 hack/stack.sh up builds and starts it)"
  elif s3_ready; then
    report s3 1 "http://127.0.0.1:$BERTH_S3_PORT (Garage), bucket $BERTH_S3_BUCKET, $(pid_of garage)"
  else
    report s3 0 "http://127.0.0.1:$BERTH_S3_PORT (Garage)"
  fi
  if docker_ready && images_present; then
    report images 1 "$BERTH_BUSYBOX_IMAGE ${BERTH_SAMPLE_VERSIONS[*]/#/$BERTH_SAMPLE_REPO:} $BERTH_EDGE_IMAGE"
  else
    report images 0 "run hack/stack.sh up"
  fi
  return "$bad"
}

cmd_env() {
  cat <<EOF
export BERTH_CACHE=$(printf %q "$BERTH_CACHE")
export BERTH_STACK_DIR=$(printf %q "$D")
export KUBECONFIG=$(printf %q "$KUBECONFIG_FILE")
export BERTH_SSH_HOST=127.0.0.1
export BERTH_SSH_PORT=$SSH_PORT
export BERTH_SSH_USER=root
export BERTH_SSH_KEY=$(printf %q "$SSH_DIR/id_ed25519")
export BERTH_SSH_KNOWN_HOSTS=$(printf %q "$SSH_DIR/known_hosts")
export BERTH_SSH_HOST_KEY_FINGERPRINT=$(host_key_fingerprint "$SSH_DIR/ssh_host_ed25519_key.pub")
export BERTH_SSH2_HOST=$SRV2_ADDR
export BERTH_SSH2_PORT=$SRV2_SSH_PORT
export BERTH_SSH2_DOCKER_SOCKET=$SRV2_DOCKER_SOCKET
export BERTH_SSH2_HOST_KEY_FINGERPRINT=$(host_key_fingerprint "$SSH_DIR/srv2_host_ed25519_key.pub")
export BERTH_DOCKER_SOCKET=$DOCKER_SOCKET
export BERTH_SAMPLE_IMAGE=$BERTH_SAMPLE_REPO:1
export BERTH_EDGE_IMAGE=$BERTH_EDGE_IMAGE
EOF
  registry_env
  postgres_env
  pebble_env
  git_server_env
  smtp_env
  s3_env
  node_env
}

# Restarts one daemon of the stack, as a server's operator would (fault tests, hack/chaos.sh).
#   docker   dockerd stops its containers; those with a restart policy come back with it
#   sshd     the listener and every connection it accepted (what a reboot of the server does to
#            SSH); clients must reconnect
#   apiserver kube-apiserver stops (TERM) and starts again; watches and requests in flight end
#   smtp     the SMTP server stops (TERM) and starts again; its connections end, mail stays
cmd_restart() {
  case "${1:-}" in
    docker)
      stop_bg dockerd 60
      up_docker
      wait_docker
      ;;
    sshd)
      local pid
      if read -r pid _ 2>/dev/null <"$(_pidfile sshd)"; then
        # Each connection's sshd is a child of the listener, in a session of its own.
        pkill -TERM -P "$pid" 2>/dev/null || true
      fi
      stop_bg sshd 10
      up_sshd
      wait_sshd
      ;;
    apiserver)
      stop_bg kube-apiserver 30
      up_apiserver
      wait_apiserver
      ;;
    smtp)
      stop_bg smtp 10
      up_smtp
      wait_smtp
      ;;
    *) die "usage: hack/stack.sh restart docker|sshd|apiserver|smtp" ;;
  esac
}

main() {
  case "${1:-}" in
    up) cmd_up ;;
    cut-srv2) cmd_cut_srv2 ;;
    restore-srv2) cmd_restore_srv2 ;;
    restart) shift; cmd_restart "$@" ;;
    node) shift; cmd_node "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    _srv2-start) srv2_start_here ;;
    -h | --help | help)
      usage
      ;;
    "")
      usage >&2
      exit 2
      ;;
    *)
      echo "hack/stack.sh: unknown command '$1'" >&2
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
