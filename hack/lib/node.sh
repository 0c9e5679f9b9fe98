# shellcheck shell=bash
# A real Kubernetes node for the local stack (hack/stack.sh node up|down|status): kubelet with
# dockershim on the stack's Docker, kube-scheduler and kube-proxy, built from the same Debian
# source as the API server, so pods really run here (../shared/IN-CLUSTER.md §1, §4).
#
# Node mode is layered on a running stack and recorded in $D/node.mode; while it is on, the API
# server and kube-controller-manager run with the flags pods need (see apiserver_mode_flags,
# controller_manager_mode_flags), and a plain 'hack/stack.sh up' keeps them.
#
# Addresses are in 198.18.0.0/15 (RFC 2544 benchmarking space), never 10/8, 172.16/12 or
# 192.168/16: the node on an interface of its own, pods on a bridge, Services on a virtual range.
#
# Sourced by hack/stack.sh after its own variables (D, PKI, LOGS, API_PORT, KUBECONFIG_FILE).

NODE_NAME=berth-node
NODE_IF=berth-node0
NODE_IP=198.18.0.1
NODE_POD_CIDR=198.18.1.0/24
NODE_BRIDGE=berth-cni0
# The Service range of the stack in both modes: the `kubernetes` Service is its first address,
# which the API server's certificate lists.
SERVICE_CIDR=198.18.128.0/17
SERVICE_KUBERNETES_IP=198.18.128.1
# The networks Docker creates (an app's, a database's, Berth's edge network): 128 of 510
# addresses each, where Docker's default pools (172.17-31/16 and 192.168/16 in /20s) hold 31
# and are not this stack's to use. The edge network holds every app of a server: a /24 would
# stop at 253 (hack/bench.sh scale deploys 300).
DOCKER_NETWORK_POOL=base=198.19.0.0/16,size=23
NODE_MODE_FILE=$D/node.mode
NODE_DIR=$D/node
KUBELET_BIN=$BERTH_CACHE/bin/kubelet
SCHEDULER_BIN=$BERTH_CACHE/bin/kube-scheduler
PROXY_BIN=$BERTH_CACHE/bin/kube-proxy
PAUSE_IMAGE=berth/pause:3.4
# Chain keeping the API server (bound to every address in node mode) off other interfaces.
NODE_INPUT_CHAIN=BERTH-NODE-INPUT

node_mode() { [[ -f "$NODE_MODE_FILE" ]]; }

# The mode a running component was started in; a flip of node mode restarts it.
_started_mode() { cat "$D/$1.mode" 2>/dev/null || echo loopback; }
_wanted_mode() { if node_mode; then echo node; else echo loopback; fi; }
record_mode() { _wanted_mode >"$D/$1.mode"; }
mode_changed() { is_running "$1" && [[ "$(_started_mode "$1")" != "$(_wanted_mode)" ]]; }

# Loopback: the API server publishes no endpoint for `kubernetes` (validation rejects a loopback
# address) and mounts no service-account token (nothing runs pods). Node mode: it listens on the
# node address too, publishes it, mounts tokens, and reaches kubelets with a client certificate.
apiserver_mode_flags() {
  if node_mode; then
    printf '%s\n' --bind-address 0.0.0.0 --advertise-address "$NODE_IP" \
      --endpoint-reconciler-type lease \
      --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
      --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
      --kubelet-preferred-address-types InternalIP
  else
    printf '%s\n' --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
      --endpoint-reconciler-type none --disable-admission-plugins ServiceAccount
  fi
}

# Node mode adds what a Deployment needs: its ReplicaSets, Service endpoints, tokens for
# ServiceAccounts, PodDisruptionBudgets, the node lifecycle (it lifts the not-ready taint the
# kubelet registers the node with, and evicts pods from a node that stops reporting), and
# PersistentVolumeClaims bound to PersistentVolumes (and released when deleted: the protection
# controllers), for the evaluation overlay's store. Not the `serviceaccount` controller: it
# would add a `default` ServiceAccount to every namespace Berth's tests create.
controller_manager_mode_flags() {
  if node_mode; then
    printf '%s\n' --controllers \
      namespace,garbagecollector,serviceaccount-token,deployment,replicaset,endpoint,endpointslice,disruption,nodelifecycle,persistentvolume-binder,pvc-protection,pv-protection \
      --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt"
  else
    printf '%s\n' --controllers namespace,garbagecollector
  fi
}

# ---- pieces -------------------------------------------------------------------------------

node_packages() {
  ensure_packages socat:socat conntrack:conntrack gcc:gcc iptables:iptables
  [[ -x /usr/lib/cni/bridge ]] || {
    log "installing containernetworking-plugins"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q containernetworking-plugins >/dev/null
  }
}

node_binaries() {
  if [[ ! -x "$KUBELET_BIN" || ! -x "$SCHEDULER_BIN" || ! -x "$PROXY_BIN" ]]; then
    log "kubelet, kube-scheduler, kube-proxy: building from Debian's source package (a few minutes, once)"
  fi
  flock "$BERTH_CACHE/.build-apiserver.lock" "$HACK_DIR/lib/build-kubernetes.sh" \
    kubelet kube-scheduler kube-proxy >&2
}

# An empty bridge holds the node address: some kernels (this VM's) have no `dummy` driver.
node_interface() {
  ip link show "$NODE_IF" >/dev/null 2>&1 || ip link add "$NODE_IF" type bridge
  ip addr replace "$NODE_IP/32" dev "$NODE_IF"
  ip link set "$NODE_IF" up
}

# The API server listens on every address in node mode; only loopback, the node's own address
# and the pod bridge may reach it.
node_firewall() {
  iptables -N "$NODE_INPUT_CHAIN" 2>/dev/null || iptables -F "$NODE_INPUT_CHAIN"
  iptables -A "$NODE_INPUT_CHAIN" -i lo -j RETURN
  iptables -A "$NODE_INPUT_CHAIN" -i "$NODE_BRIDGE" -j RETURN
  iptables -A "$NODE_INPUT_CHAIN" -p tcp --dport "$API_PORT" -j DROP
  iptables -C INPUT -j "$NODE_INPUT_CHAIN" 2>/dev/null || iptables -I INPUT -j "$NODE_INPUT_CHAIN"
}

node_firewall_down() {
  iptables -D INPUT -j "$NODE_INPUT_CHAIN" 2>/dev/null || true
  iptables -F "$NODE_INPUT_CHAIN" 2>/dev/null || true
  iptables -X "$NODE_INPUT_CHAIN" 2>/dev/null || true
}

# The API server's client certificate towards the kubelet (logs, exec, port-forward).
node_pki() {
  [[ -f "$PKI/apiserver-kubelet-client.crt" ]] && return 0
  log "pki: the API server's kubelet client certificate"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$PKI/apiserver-kubelet-client.key" -out "$PKI/apiserver-kubelet-client.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/apiserver-kubelet-client.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 3650 -out "$PKI/apiserver-kubelet-client.crt" \
    -extfile <(echo "extendedKeyUsage=clientAuth") 2>/dev/null
  rm -f "$PKI/apiserver-kubelet-client.csr"
}

# A static pause binary (the pod sandbox) built from the Kubernetes tree: FROM scratch, nothing
# pulled. It exits at once on SIGTERM, as the real one does.
node_pause_image() {
  local src=$BERTH_CACHE/build/kubernetes/src/build/pause/linux/pause.c hash ctx
  hash=$(sha256sum <"$src" | cut -c1-16)
  if [[ "$(docker image inspect -f '{{index .Config.Labels "local.berth-stack.source-hash"}}' \
    "$PAUSE_IMAGE" 2>/dev/null)" == "$hash" ]]; then
    return 0
  fi
  log "image $PAUSE_IMAGE: building from $src"
  ctx=$(mktemp -d)
  gcc -Os -Wall -Werror -static -DVERSION=v3.4-berth "$src" -o "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q --label "local.berth-stack.source-hash=$hash" \
    -t "$PAUSE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# One bridge and host-local addresses; `firewall` accepts pod traffic in FORWARD, whose policy
# Docker set to DROP; masquerading lets pods reach server 2, whose namespace has no route back.
node_cni_config() {
  mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/cni/ipam"
  cat >"$NODE_DIR/cni/net.d/10-berth.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "berth-pods",
  "plugins": [
    {"type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": true, "ipMasq": true,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NODE_POD_CIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$NODE_DIR/cni/ipam"}},
    {"type": "firewall", "backend": "iptables"},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

# sshd also listens on the node address (write_sshd_config in node mode), so a Server
# registered from a pod reaches this machine.
node_sshd() {
  ensure_ssh_keys
  up_sshd
}

# The kubelet shares Docker with everything else here: image garbage collection and disk
# eviction are held off so images no pod uses (the stack's own) are never removed. It rewrites
# vm.overcommit_memory, kernel.panic and kernel.panic_on_oops to its defaults on start.
up_kubelet() {
  is_running kubelet && return 0
  log "kubelet: starting node $NODE_NAME on $NODE_IP (dockershim on $DOCKER_SOCKET)"
  mkdir -p "$NODE_DIR/kubelet/pki" "$NODE_DIR/kubelet/plugins"
  start_bg kubelet "$LOGS/kubelet.log" "$KUBELET_BIN" \
    --kubeconfig "$KUBECONFIG_FILE" --hostname-override "$NODE_NAME" \
    --node-ip "$NODE_IP" --address "$NODE_IP" --read-only-port 0 \
    --healthz-bind-address 127.0.0.1 --anonymous-auth=false --client-ca-file "$PKI/ca.crt" \
    --authorization-mode Webhook \
    --container-runtime docker --docker-endpoint "unix://$DOCKER_SOCKET" \
    --pod-infra-container-image "$PAUSE_IMAGE" \
    --network-plugin cni --cni-bin-dir /usr/lib/cni --cni-conf-dir "$NODE_DIR/cni/net.d" \
    --cgroup-driver "$(docker info -f '{{.CgroupDriver}}')" --fail-swap-on=false \
    --root-dir "$NODE_DIR/kubelet" --cert-dir "$NODE_DIR/kubelet/pki" \
    --volume-plugin-dir "$NODE_DIR/kubelet/plugins" \
    --image-gc-high-threshold 100 --image-gc-low-threshold 99 \
    --eviction-hard 'memory.available<100Mi,nodefs.available<2%,imagefs.available<2%' \
    --max-pods 30 --oom-score-adj 0
}

up_scheduler() {
  is_running kube-scheduler && return 0
  log "kube-scheduler: starting"
  start_bg kube-scheduler "$LOGS/kube-scheduler.log" "$SCHEDULER_BIN" \
    --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --authentication-skip-lookup --leader-elect=false --port 0 \
    --bind-address 127.0.0.1 --secure-port 10259
}

up_proxy() {
  is_running kube-proxy && return 0
  log "kube-proxy: starting (iptables; Services in $SERVICE_CIDR)"
  start_bg kube-proxy "$LOGS/kube-proxy.log" "$PROXY_BIN" \
    --kubeconfig "$KUBECONFIG_FILE" --hostname-override "$NODE_NAME" \
    --proxy-mode iptables --cluster-cidr "$NODE_POD_CIDR" \
    --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256 \
    --conntrack-max-per-core 0
}

node_ready() {
  [[ "$(kubectl_stack get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# The `kubernetes` Service keeps the address it got under an earlier range; deleted, the API
# server recreates it at the first address of the current one.
node_kubernetes_service() {
  local ip
  ip=$(kubectl_stack get service kubernetes -o jsonpath='{.spec.clusterIP}' 2>/dev/null || true)
  if [[ -n "$ip" && "$ip" != "$SERVICE_KUBERNETES_IP" ]]; then
    log "kube-apiserver: moving Service kubernetes from $ip to $SERVICE_KUBERNETES_IP"
    kubectl_stack delete service kubernetes >/dev/null
  fi
  wait_for 60 "Service kubernetes at $SERVICE_KUBERNETES_IP" kubernetes_service_moved
}

kubernetes_service_moved() {
  [[ "$(kubectl_stack get service kubernetes -o jsonpath='{.spec.clusterIP}')" == "$SERVICE_KUBERNETES_IP" ]]
}

# Restarts the API server and kube-controller-manager when they run in the other mode.
apply_mode() {
  if mode_changed kube-apiserver; then
    log "kube-apiserver: restarting in $(_wanted_mode) mode"
    stop_bg kube-apiserver 30
  fi
  up_apiserver
  wait_apiserver
  if mode_changed kube-controller-manager; then
    log "kube-controller-manager: restarting in $(_wanted_mode) mode"
    stop_bg kube-controller-manager 30
  fi
  up_controller_manager
  wait_controller_manager
}

# ---- commands -----------------------------------------------------------------------------

cmd_node_up() {
  local start=$SECONDS
  apiserver_ready || die "the stack is not up: run hack/stack.sh up first"
  node_packages
  node_binaries
  node_interface
  node_pki
  touch "$NODE_MODE_FILE"
  ensure_pki
  apply_mode
  reconfigure_postgres
  node_firewall
  node_kubernetes_service
  node_sshd
  node_pause_image
  node_cni_config
  up_scheduler
  up_proxy
  up_kubelet
  wait_for 120 "node $NODE_NAME Ready (log: $LOGS/kubelet.log)" node_ready
  log "node $NODE_NAME up in $((SECONDS - start))s: pods run on $NODE_IP, Services in $SERVICE_CIDR"
}

# Workloads stay (a Deployment's pods wait, Pending, for a node); the pods that ran here are
# removed with their containers, since no kubelet is left to finish their deletion.
cmd_node_down() {
  local ids=()
  stop_bg kube-proxy 15
  if [[ -x "$PROXY_BIN" ]]; then "$PROXY_BIN" --cleanup >/dev/null 2>&1 || true; fi
  stop_bg kubelet 20
  stop_bg kube-scheduler 15
  mapfile -t ids < <(docker ps -aq --filter label=io.kubernetes.pod.name 2>/dev/null)
  ((${#ids[@]} == 0)) || docker rm -f "${ids[@]}" >/dev/null 2>&1 || true
  if apiserver_ready; then
    kubectl_stack delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" \
      --force --grace-period=0 >/dev/null 2>&1 || true
  fi
  if mountpoint -q "$NODE_DIR/kubelet" 2>/dev/null || grep -q " $NODE_DIR/kubelet" /proc/mounts; then
    umount -R "$NODE_DIR/kubelet" 2>/dev/null || umount -lR "$NODE_DIR/kubelet" 2>/dev/null || true
  fi
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  rm -rf "$NODE_DIR/cni/ipam"
  node_firewall_down
  rm -f "$NODE_MODE_FILE"
  reconfigure_postgres
  if apiserver_ready; then
    kubectl_stack delete node "$NODE_NAME" --ignore-not-found >/dev/null 2>&1 || true
    apply_mode
  fi
  ensure_ssh_keys
  reload_if_changed sshd "$SSH_DIR/sshd_config"
  ip link del "$NODE_IF" 2>/dev/null || true
  log "node $NODE_NAME down; the API server listens on loopback only"
}

cmd_node_status() {
  local bad=0 name
  if node_mode; then echo "node mode               on ($NODE_IP, pods $NODE_POD_CIDR, Services $SERVICE_CIDR)"; else
    echo "node mode               off"
    bad=1
  fi
  for name in kubelet kube-scheduler kube-proxy; do
    if is_running "$name"; then printf '%-24s up    pid %s\n' "$name" "$(cut -d' ' -f1 "$D/$name.pid")"; else
      printf '%-24s down\n' "$name"
      bad=1
    fi
  done
  if node_ready; then echo "node $NODE_NAME         Ready"; else
    echo "node $NODE_NAME         not Ready"
    bad=1
  fi
  return "$bad"
}

# Export lines for tests and hack/dev.sh --in-cluster (part of 'hack/stack.sh env').
node_env() {
  node_mode || return 0
  [[ -r "$BERTH_POSTGRES_ENV" ]] || return 0
  # shellcheck disable=SC1090
  source "$BERTH_POSTGRES_ENV"
  local url="postgres://$BERTH_POSTGRES_USER:$BERTH_POSTGRES_PASSWORD@$NODE_IP:$BERTH_POSTGRES_PORT/$BERTH_POSTGRES_DB"
  echo "export BERTH_NODE_IP=$NODE_IP"
  echo "export BERTH_NODE_POSTGRES_URL=$(printf %q "$url")"
}

cmd_node() {
  case "${1:-}" in
    up) cmd_node_up ;;
    down) cmd_node_down ;;
    status) cmd_node_status ;;
    *) die "usage: hack/stack.sh node up|down|status" ;;
  esac
}
