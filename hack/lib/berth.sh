# shellcheck shell=bash
# Helpers shared by hack/dev.sh and hack/test.sh: build Berth, install it into the local stack,
# and run its processes. Source after common.sh, with the stack's environment exported.
#
#   berth_build                  cargo build of every binary (cached in $CARGO_TARGET_DIR)
#   berth_install_crds           apply manifests/crds and wait until they are Established
#   berth_install_rbac           apply manifests/rbac (namespace, ServiceAccount, roles)
#   berth_controller_kubeconfig  write a kubeconfig holding the controller ServiceAccount's token
#   berth_start_controller LOG   (re)start berth-controller in the background as that identity
#   berth_stop_controller

BERTH_REPO_ROOT=${BERTH_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$BERTH_CACHE/target}
BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug
BERTH_RUN_DIR=$BERTH_REPO_ROOT/.berth
CONTROLLER_KUBECONFIG=$BERTH_STACK_DIR/berth-controller.kubeconfig
CONTROLLER_ADDR=${BERTH_CONTROLLER_ADDR:-127.0.0.1:9464}

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

# The controller runs as its ServiceAccount, not as the stack's admin, so every run checks that
# manifests/rbac grants what it needs.
berth_controller_kubeconfig() {
  local token server ca
  token=$(kubectl -n berth-system create token berth-controller --duration=720h)
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  umask 077
  cat >"$CONTROLLER_KUBECONFIG" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: $server
      certificate-authority-data: $ca
users:
  - name: berth-controller
    user:
      token: $token
contexts:
  - name: berth-controller
    context: {cluster: local, user: berth-controller}
current-context: berth-controller
KUBECONFIG
}

controller_ready() { curl -fs --max-time 2 "http://$CONTROLLER_ADDR/readyz" >/dev/null; }

berth_start_controller() {
  local logfile=$1
  berth_stop_controller
  berth_controller_kubeconfig
  log "starting berth-controller (log: $logfile)"
  KUBECONFIG=$CONTROLLER_KUBECONFIG BERTH_CONTROLLER_ADDR=$CONTROLLER_ADDR \
    start_bg berth-controller "$logfile" "$BERTH_BIN_DIR/berth-controller" run
  wait_for 60 "berth-controller /readyz (log: $logfile)" controller_ready
}

berth_stop_controller() { stop_bg berth-controller 20; }
