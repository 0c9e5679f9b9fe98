# shellcheck shell=bash
# Helpers shared by hack/dev.sh and hack/test.sh: build Berth, install it into the local stack,
# and run its processes. Source after common.sh, with the stack's environment exported.
#
#   berth_build                  cargo build of every binary (cached in $CARGO_TARGET_DIR)
#   berth_install_crds           apply manifests/crds and wait until they are Established
#   berth_install_rbac           apply manifests/rbac (namespace, ServiceAccount, roles)
#   berth_sa_kubeconfig NAME     write a kubeconfig holding ServiceAccount NAME's token
#   berth_start_controller LOG   (re)start berth-controller in the background as its identity
#   berth_stop_controller
#   berth_start_shim LOG         (re)start berth-shim (the REST API) as its identity
#   berth_stop_shim
#   berth_bootstrap_admin        create the first administrator once; credentials in admin.env
#   berth_quickstart_secret      the quickstart organization and its Secret local-server-key
#   berth_remove_orphan_proxies  edge-proxy containers of test namespaces that no longer exist
#   berth_remove_orphan_dependencies  dependency containers, networks, volumes of gone test namespaces
#   berth_remove_orphan_volumes  unused anonymous volumes, and storage volumes of gone test namespaces

BERTH_REPO_ROOT=${BERTH_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug
BERTH_RUN_DIR=$BERTH_REPO_ROOT/.berth
CONTROLLER_ADDR=${BERTH_CONTROLLER_ADDR:-127.0.0.1:9464}
SHIM_ADDR=${BERTH_SHIM_ADDR:-127.0.0.1:7070}
export BERTH_URL=http://$SHIM_ADDR/api
# The first administrator's credentials live beside the cluster state they belong to.
BERTH_ADMIN_ENV=$BERTH_STACK_DIR/admin.env
# So do the observation store's deployment timelines, shared by berth-controller and berth-shim.
export BERTH_DATA_DIR=${BERTH_DATA_DIR:-$BERTH_STACK_DIR/data}

berth_build() {
  log "building Berth (cargo build; cached in $CARGO_TARGET_DIR)"
  (cd "$BERTH_REPO_ROOT" && cargo build --bins --quiet)
}

berth_install_crds() {
  log "installing CRDs"
  kubectl apply --server-side --force-conflicts -k "$BERTH_REPO_ROOT/manifests/crds/" >/dev/null
  local file
  for file in "$BERTH_REPO_ROOT"/manifests/crds/*.berth.dev.yaml; do
    kubectl wait --for condition=established --timeout=60s -f "$file" >/dev/null
  done
}

berth_install_rbac() {
  log "installing RBAC for berth-controller"
  kubectl apply --server-side --force-conflicts -f "$BERTH_REPO_ROOT/manifests/rbac/" >/dev/null
}

# Berth's processes run as their ServiceAccounts, not as the stack's admin, so every run checks
# that manifests/rbac grants what they need. Prints the kubeconfig's path.
berth_sa_kubeconfig() {
  local name=$1 token server ca file=$BERTH_STACK_DIR/$1.kubeconfig
  token=$(kubectl -n berth-system create token "$name" --duration=720h)
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  (umask 077 && cat >"$file") <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: $server
      certificate-authority-data: $ca
users:
  - name: $name
    user:
      token: $token
contexts:
  - name: $name
    context: {cluster: local, user: $name}
current-context: $name
KUBECONFIG
  echo "$file"
}

# Ready means able to lead; the local stack runs one replica, so it waits until it leads too.
controller_leading() {
  curl -fs --max-time 2 "http://$CONTROLLER_ADDR/readyz" >/dev/null &&
    curl -fs --max-time 2 "http://$CONTROLLER_ADDR/metrics" | grep -qx 'berth_leader 1'
}

berth_start_controller() {
  local logfile=$1 kubeconfig
  berth_stop_controller
  kubeconfig=$(berth_sa_kubeconfig berth-controller)
  log "starting berth-controller (log: $logfile)"
  # Volume backups' helper containers use the stack's busybox (nothing is pulled here).
  # The leader asks berth-shim to run each step of a Migration written with kubectl.
  KUBECONFIG=$kubeconfig BERTH_CONTROLLER_ADDR=$CONTROLLER_ADDR BERTH_SHIM_URL=http://$SHIM_ADDR \
    BERTH_VOLUME_HELPER_IMAGE=${BERTH_VOLUME_HELPER_IMAGE:-berth/busybox:1} \
    start_bg berth-controller "$logfile" "$BERTH_BIN_DIR/berth-controller" run
  wait_for 60 "berth-controller to lead (log: $logfile)" controller_leading
}

berth_stop_controller() { stop_bg berth-controller 20; }

shim_ready() { curl -fs --max-time 2 "http://$SHIM_ADDR/readyz" >/dev/null; }

berth_start_shim() {
  local logfile=$1 kubeconfig
  berth_stop_shim
  kubeconfig=$(berth_sa_kubeconfig berth-shim)
  log "starting berth-shim (log: $logfile)"
  KUBECONFIG=$kubeconfig BERTH_SHIM_ADDR=$SHIM_ADDR \
    start_bg berth-shim "$logfile" "$BERTH_BIN_DIR/berth-shim"
  wait_for 60 "berth-shim /readyz (log: $logfile)" shim_ready
}

berth_stop_shim() { stop_bg berth-shim 20; }

# The first-admin call succeeds once per cluster, and its password is shown once: keep it in
# admin.env (mode 600) beside the etcd data it belongs to.
berth_bootstrap_admin() {
  local status result
  status=$(curl -fsS "$BERTH_URL/bootstrap/auth/status")
  if [[ "$(jq -r .bootstrapRequired <<<"$status")" == true ]]; then
    log "creating the first administrator"
    result=$(curl -fsS -X POST -H 'Content-Type: application/json' \
      -d '{"email":"admin@berth.local","displayName":"Administrator","organizationName":"Acme"}' \
      "$BERTH_URL/bootstrap/auth/first-admin")
    (umask 077 && jq -r '"export BERTH_ADMIN_EMAIL=\(.email)\nexport BERTH_ADMIN_PASSWORD=\(.generatedPassword)"' \
      <<<"$result" >"$BERTH_ADMIN_ENV")
  elif [[ ! -s "$BERTH_ADMIN_ENV" ]]; then
    warn "a first administrator exists but $BERTH_ADMIN_ENV is missing; its password is unknown here"
    return 0
  fi
  # shellcheck source=/dev/null
  source "$BERTH_ADMIN_ENV"
  export BERTH_ADMIN_EMAIL BERTH_ADMIN_PASSWORD
}

# The quickstart's server logs in with the stack's client key; that private key goes only into
# the Secret the SshCredential references (never into a manifest). The organization creates the
# namespace, so it is applied first. Idempotent.
berth_quickstart_secret() {
  local org=$BERTH_REPO_ROOT/examples/quickstart/00-organization.yaml
  kubectl apply --server-side -f "$org" >/dev/null
  kubectl wait --for=condition=Ready --timeout=60s -f "$org" >/dev/null
  kubectl -n org-acme create secret generic local-server-key \
    --from-file=privateKey="$BERTH_SSH_KEY" --dry-run=client -o yaml |
    kubectl apply --server-side -f - >/dev/null
  berth_admin_membership
}

# The first administrator owns the quickstart organization (bootstrap created it). Deleting the
# quickstart deletes that organization with its members; applying it again makes a new one, so
# the administrator's membership is restored here. Idempotent.
berth_admin_membership() {
  [[ -n "${BERTH_ADMIN_EMAIL:-}" ]] || return 0
  local user
  user=$(kubectl get users.berth.dev -o json |
    jq -r --arg email "$BERTH_ADMIN_EMAIL" '.items[] | select(.spec.email == $email) | .metadata.name' |
    head -1)
  [[ -n "$user" ]] || return 0
  if kubectl -n org-acme get members.berth.dev -o json |
    jq -e --arg user "$user" 'any(.items[]; .spec.userId == $user)' >/dev/null; then
    return 0
  fi
  log "restoring $BERTH_ADMIN_EMAIL as owner of the quickstart organization"
  kubectl apply --server-side -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Member
metadata: { name: mem-$user, namespace: org-acme }
spec: { userId: $user, email: $BERTH_ADMIN_EMAIL, role: owner, active: true }
YAML
}

# A test namespace deleted while its Server was unreachable (the node taken down under it, a
# run killed midway) leaves its edge proxy running on this machine's Docker, holding a host
# port a later namespace may hash to. Test namespaces start with `t-`.
berth_remove_orphan_proxies() {
  local name namespace
  while read -r name; do
    namespace=${name#berth-edge-proxy.}
    namespace=${namespace%%.*}
    if ! kubectl get namespace "$namespace" >/dev/null 2>&1; then
      log "removing $name (its namespace $namespace is gone)"
      docker rm -f "$name" >/dev/null 2>&1 || true
    fi
  done < <(docker ps -a --format '{{.Names}}' --filter name=berth-edge-proxy.t- 2>/dev/null)
}

# A test namespace whose dependencies outlived the controller (a run ended before they were
# cleaned up) leaves their containers, networks and data volumes (berth-dep-<namespace>-<id>);
# they pile up run after run until Docker has no network address left. Test namespaces start
# with `t-` or `org-t-`; those still present are the controller's to clean.
berth_remove_orphan_dependencies() {
  local live kind name removed=0 force
  live=$(kubectl get namespaces -o name | sed 's|^namespace/||' | grep -E '^(org-)?t-' || true)
  _berth_orphan() {
    local rest=${1#berth-dep-} namespace
    for namespace in $live; do [[ $rest == "$namespace-"* ]] && return 1; done
    return 0
  }
  _berth_named() {
    case $1 in
      container) docker ps -a --format '{{.Names}}' ;;
      *) docker "$1" ls --format '{{.Name}}' ;;
    esac 2>/dev/null | grep -E '^berth-dep-(org-)?t-' || true
  }
  # Containers first: a network or volume in use cannot go.
  for kind in container network volume; do
    while read -r name; do
      _berth_orphan "$name" || continue
      # `network rm` has no --force; the others need it (a running container, a volume).
      force=(--force)
      [[ $kind == network ]] && force=()
      if docker "$kind" rm "${force[@]}" "$name" >/dev/null 2>&1; then
        removed=$((removed + 1))
      else
        log "could not remove the orphaned $kind $name"
      fi
    done < <(_berth_named "$kind")
  done
  ((removed == 0)) || log "removed $removed containers, networks and volumes of gone test namespaces' dependencies"
}

# Unused Docker volumes the tests leave behind: anonymous ones (an image's VOLUME, from a
# container a test removed itself) and storage volumes (berth-<namespace>-<volume>) of test
# namespaces that are gone. A few GB a run otherwise, until the kubelet's disk-pressure
# eviction stops pods being scheduled.
berth_remove_orphan_volumes() {
  local live name namespace removed=0
  live=$(kubectl get namespaces -o name | sed 's|^namespace/||' | grep -E '^(org-)?t-' || true)
  while read -r name; do
    if [[ ! $name =~ ^[0-9a-f]{64}$ ]]; then
      [[ $name =~ ^berth-(org-)?t- ]] || continue
      for namespace in $live; do [[ ${name#berth-} == "$namespace-"* ]] && continue 2; done
    fi
    docker volume rm "$name" >/dev/null 2>&1 && removed=$((removed + 1))
  done < <(docker volume ls -q --filter dangling=true 2>/dev/null)
  ((removed == 0)) || log "removed $removed unused volumes (anonymous, or of gone test namespaces)"
}
