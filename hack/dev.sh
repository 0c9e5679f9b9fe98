#!/usr/bin/env bash
# README command 1: bring up the local stack, install and run Berth, apply the quickstart.
#   hack/dev.sh              set everything up (idempotent) and leave Berth running
#   hack/dev.sh --in-cluster the same with Berth as pods on the stack's node
#   hack/dev.sh down         stop Berth and the local stack
set -euo pipefail
HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BERTH_LOG_PREFIX=dev
# shellcheck source-path=SCRIPTDIR
source "$HACK_DIR/lib/common.sh"

usage() {
  cat <<USAGE
Usage: hack/dev.sh [up|--in-cluster|down|--help]

up (default)  start the local stack (hack/stack.sh up), build Berth, install its CRDs and RBAC,
              run berth-controller and berth-shim (the REST API) in the background, create the
              first administrator once, apply examples/quickstart/ and wait
              until every quickstart object is Ready. Writes .berth/dev.env; logs in .berth/.
--in-cluster  the same, with Berth running as pods: the stack's node (hack/stack.sh node up:
              kubelet, kube-scheduler, kube-proxy), images berth/controller:dev and
              berth/shim:dev built from the debug binaries, hack/in-cluster/ applied (two
              replicas of each, PostgreSQL as the observation store), the administrator
              created through the shim's Service. A later plain 'up' goes back to processes.
down          stop berth-controller and the local stack.
USAGE
}

up() {
  local started=$SECONDS in_cluster=${1:-}
  "$HACK_DIR/stack.sh" up
  eval "$("$HACK_DIR/stack.sh" env)"
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  mkdir -p "$BERTH_RUN_DIR"
  berth_build
  # A running hack/test.sh (or benchmark) owns Berth's processes until it ends.
  exec 9>"$BERTH_STACK_DIR/integration.lock"
  if ! flock -n 9; then
    log "a test run or benchmark is using Berth's processes; waiting for it to finish"
    flock 9
  fi
  berth_install_crds
  berth_install_rbac
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/in-cluster.sh"
  if [[ -n "$in_cluster" ]]; then
    start_in_cluster
  else
    start_processes
  fi
  berth_bootstrap_admin
  # Written before the quickstart: whatever happens next, the credentials are at hand.
  write_dev_env
  apply_quickstart
  summary $((SECONDS - started))
}

# fd 9 closed: what starts here outlives this script and must not hold its lock.
start_processes() {
  if [[ -f "$BERTH_STACK_DIR/node.mode" ]]; then
    log "Berth ran as pods: removing them and the stack's node"
    in_cluster_remove
    "$HACK_DIR/stack.sh" node down 9>&-
    eval "$("$HACK_DIR/stack.sh" env)"
  fi
  QUICKSTART=$BERTH_REPO_ROOT/examples/quickstart
  berth_start_controller "$BERTH_RUN_DIR/controller.log" 9>&-
  berth_start_shim "$BERTH_RUN_DIR/shim.log" 9>&-
}

start_in_cluster() {
  berth_stop_shim
  berth_stop_controller
  in_cluster_up 9>&-
  in_cluster_apply
  QUICKSTART=$BERTH_REPO_ROOT/hack/in-cluster/quickstart
  BERTH_URL=$(in_cluster_url)
  CONTROLLER_ADDR=""
}

apply_quickstart() {
  local dir=$QUICKSTART
  log "applying ${dir#"$BERTH_REPO_ROOT"/}/"
  # The organization (applied first: it creates the namespace) and the local server's key.
  berth_quickstart_secret
  kubectl apply --server-side -k "$dir" >/dev/null
  log "waiting for the quickstart objects to be Ready (the sample app deploys meanwhile)"
  if ! kubectl kustomize "$dir" | kubectl wait --for=condition=Ready --timeout=180s -f - >/dev/null; then
    explain_not_ready "$dir"
    die "the quickstart did not become Ready; see above, and .berth/controller.log"
  fi
  sample_app_url=$(kubectl get resource.berth.dev sample-app -n org-acme \
    -o jsonpath='{.status.accessSummary.latestGeneratedAccessRoute.url}')
  log "sample app served at $sample_app_url"
  # A restarted stack restarts the edge proxy without routes; the controller writes the route
  # again within seconds (Event RouteRestored), so give it that long.
  wait_for 30 "the sample app answering at $sample_app_url" \
    curl -fsS --max-time 5 -o /dev/null --resolve "$(sample_app_resolve)" "$sample_app_url"
}

# For every quickstart object that is not Ready: its conditions, and a deployment's last error.
explain_not_ready() {
  local dir=$1
  kubectl kustomize "$dir" | kubectl get -f - -o json | jq -r '
    (if .kind == "List" then .items else [.] end)[]
    | select([.status.conditions // [] | .[] | select(.type == "Ready" and .status == "True")] | length == 0)
    | "\(.kind)/\(.metadata.name) is not Ready:",
      (.status.conditions // [] | .[] | "  \(.type)=\(.status) \(.reason): \(.message)"),
      (if .status.lastDeploymentId then "  last deployment: \(.status.lastDeploymentId) (\(.status.lastDeploymentStatus))" else empty end)' >&2
  local deployment
  deployment=$(kubectl -n org-acme get resource.berth.dev sample-app \
    -o jsonpath='{.status.lastDeploymentId}' 2>/dev/null || true)
  if [[ -n "$deployment" ]]; then
    kubectl -n org-acme get deployment.berth.dev "$deployment" -o json | jq -r '
      "Deployment/\(.metadata.name): \(.status.status // "created"), step: \(.status.currentStep.label // "-")",
      (.status.lastError // empty | "  last error: \(.phase) \(.code): \(.message)"),
      (.status.retry // empty | "  retry \(.count) at \(.nextRetryAt): \(.lastError.code): \(.lastError.message)")' >&2
  fi
}

# `host:port:127.0.0.1` for curl --resolve: *.localhost names always mean this machine.
sample_app_resolve() {
  local authority=${sample_app_url#http://}
  authority=${authority%%/*}
  echo "$authority:127.0.0.1"
}

write_dev_env() {
  local file=$BERTH_RUN_DIR/dev.env
  # It holds the administrator's password: readable by its owner only.
  (
    umask 077
    rm -f "$file"
    {
      "$HACK_DIR/stack.sh" env
      echo "export BERTH_URL=$BERTH_URL"
      if [[ -n "$CONTROLLER_ADDR" ]]; then echo "export BERTH_CONTROLLER_URL=http://$CONTROLLER_ADDR"; fi
      if [[ -s "$BERTH_ADMIN_ENV" ]]; then cat "$BERTH_ADMIN_ENV"; fi
    } >"$file"
  )
}

# The administrator's email and password for the console, or where they would be.
admin_sign_in() {
  if [[ -s "$BERTH_ADMIN_ENV" ]]; then
    # shellcheck disable=SC1090 # written by berth_bootstrap_admin
    (source "$BERTH_ADMIN_ENV" && echo "$BERTH_ADMIN_EMAIL / $BERTH_ADMIN_PASSWORD")
  else
    echo "(unknown: $BERTH_ADMIN_ENV is missing)"
  fi
}

controller_where() {
  if [[ -n "$CONTROLLER_ADDR" ]]; then
    echo "http://$CONTROLLER_ADDR/metrics   log: .berth/controller.log"
  else
    echo "pods: kubectl -n berth-system get pods   logs: kubectl -n berth-system logs deploy/berth-controller"
  fi
}

summary() {
  cat <<SUMMARY

Berth is running (set up in $1 s).
  environment      source .berth/dev.env
  web console      ${BERTH_URL%/api}/   sign in as the administrator: $(admin_sign_in)
  REST API         $BERTH_URL   (OpenAPI: $BERTH_URL/openapi.json)   log: .berth/shim.log
  administrator    \$BERTH_ADMIN_EMAIL / \$BERTH_ADMIN_PASSWORD (in .berth/dev.env)
  try it           source .berth/dev.env && curl -s \$BERTH_URL/bootstrap/auth/status
  berth CLI        $BERTH_BIN_DIR/berth   (built with Berth; put it on PATH, or link it as kubectl-berth)
                   echo "\$BERTH_ADMIN_PASSWORD" | berth login --email "\$BERTH_ADMIN_EMAIL" --password-stdin
  controller       $(controller_where)
  API server       $(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  local server     ssh -i \$BERTH_SSH_KEY -p \$BERTH_SSH_PORT root@127.0.0.1
  sample app       curl --resolve $(sample_app_resolve) $sample_app_url
  quickstart       kubectl get berth -n org-acme
$(kubectl kustomize "$QUICKSTART" | kubectl get -f - 2>/dev/null | sed 's/^/    /')

Stop everything with: hack/dev.sh down
SUMMARY
}

down() {
  eval "$("$HACK_DIR/stack.sh" env)"
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  log "stopping berth-shim and berth-controller"
  berth_stop_shim
  berth_stop_controller
  if [[ -f "$BERTH_STACK_DIR/node.mode" ]]; then
    # shellcheck source-path=SCRIPTDIR
    source "$HACK_DIR/lib/in-cluster.sh"
    in_cluster_remove || true
  fi
  "$HACK_DIR/stack.sh" down
}

case "${1:-up}" in
  up) up ;;
  --in-cluster) up in-cluster ;;
  down) down ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
