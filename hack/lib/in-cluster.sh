# shellcheck shell=bash
# Berth as pods on the local stack's node (hack/stack.sh node up), from locally built images:
# what `hack/dev.sh --in-cluster` and the in-cluster test step of hack/test.sh share. Source
# after common.sh and berth.sh, with the stack's env loaded.
#
#   in_cluster_up        node up, images berth/controller:dev and berth/shim:dev from the debug
#                        build, the Secret berth-observation-store (the stack's PostgreSQL,
#                        sslmode=verify-full against the stack's authority in its ca.crt)
#   in_cluster_apply     kubectl apply -k hack/in-cluster/; wait for both Deployments
#   in_cluster_url       the shim's Service as a base URL: http://CLUSTER-IP/api
#   in_cluster_logs      the end of both Deployments' logs (after a failure)
#   in_cluster_why_not_ready  pods, warnings, the node's conditions and logs (rollout timed out)
#   in_cluster_remove    delete Berth's workloads (CRDs, RBAC and objects stay)
#   in_cluster_first_admin_repair
#                        the first-admin label back on admin.env's user only (the in-cluster
#                        test takes it off to create a first administrator through the Service)

IN_CLUSTER_OVERLAY=$BERTH_REPO_ROOT/hack/in-cluster
# The node folder behind the evaluation overlay's PersistentVolume.
IN_CLUSTER_EVALUATION_DATA=/var/lib/berth-evaluation-data

in_cluster_up() {
  "$BERTH_REPO_ROOT/hack/stack.sh" node up 9>&-
  eval "$("$BERTH_REPO_ROOT/hack/stack.sh" env)"
  "$BERTH_REPO_ROOT/hack/images.sh" berth debug dev >/dev/null
  [[ -n "${BERTH_NODE_POSTGRES_URL:-}" ]] || die "hack/stack.sh env gave no BERTH_NODE_POSTGRES_URL"
  local verified="sslmode=verify-full&sslrootcert=/etc/berth/store-ca/ca.crt"
  kubectl -n berth-system create secret generic berth-observation-store \
    --from-literal=url="$BERTH_NODE_POSTGRES_URL?$verified" \
    --from-file=ca.crt="$BERTH_TEST_POSTGRES_CA" --dry-run=client -o yaml |
    kubectl apply -f - >/dev/null
}

in_cluster_apply() {
  log "kubectl apply -k hack/in-cluster/ (berth/controller:dev, berth/shim:dev)"
  # --force-conflicts: a test's `kubectl set image` owns the image field until this resets it.
  kubectl apply --server-side --force-conflicts -k "$IN_CLUSTER_OVERLAY" >/dev/null
  # The tag stays `dev` across builds: the image's id in the pod template rolls the pods
  # out when the image changed (and only then).
  local app image id
  for app in controller shim; do
    image=berth/$app:dev
    id=$(docker image inspect -f '{{.Id}}' "$image")
    kubectl -n berth-system patch deployment "berth-$app" --type merge -p \
      "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"berth.dev/image-id\":\"${id#sha256:}\"}}}}}" >/dev/null
  done
  for app in controller shim; do
    kubectl -n berth-system rollout status "deploy/berth-$app" --timeout=240s >&2 ||
      { in_cluster_why_not_ready; die "deploy/berth-$app did not roll out within 240 s"; }
  done
}

# Why pods do not come up: their phase and the namespace's warnings (a node under disk
# pressure, an image missing), then the logs.
in_cluster_why_not_ready() {
  kubectl -n berth-system get pods -o wide >&2 || true
  kubectl -n berth-system get events --field-selector type=Warning 2>&1 | tail -15 >&2 || true
  kubectl describe node | grep -A8 '^Conditions:' >&2 || true
  in_cluster_logs
}

in_cluster_url() {
  echo "http://$(kubectl -n berth-system get service berth-shim -o jsonpath='{.spec.clusterIP}')/api"
}

in_cluster_logs() {
  local app
  for app in berth-controller berth-shim; do
    echo "---- the end of deploy/$app's logs" >&2
    kubectl -n berth-system logs "deploy/$app" --tail=40 2>&1 | cut -c1-400 >&2 || true
  done
}

# Only the workloads: deleting the overlay itself would delete the CRDs, and every object of
# Berth with them.
in_cluster_remove() {
  # Foreground: the command returns once the pods are gone, and with them the Lease's holder.
  kubectl -n berth-system delete deployment berth-controller berth-shim --cascade=foreground \
    --ignore-not-found --wait=true --timeout=90s >/dev/null ||
    warn "Berth's pods did not stop within 90 s"
  kubectl -n berth-system delete service/berth-shim networkpolicy/berth \
    poddisruptionbudget/berth-controller poddisruptionbudget/berth-shim \
    persistentvolumeclaim/berth-data --ignore-not-found >/dev/null || true
  # The evaluation overlay's data (hack/in-cluster/evaluation/berth-data-volume.yaml).
  kubectl delete persistentvolume berth-evaluation-data --ignore-not-found >/dev/null || true
  rm -rf "$IN_CLUSTER_EVALUATION_DATA"
}

# Idempotent; a no-op when admin.env is unknown here. The lock ConfigMap comes back too, so a
# second first administrator stays refused.
in_cluster_first_admin_repair() {
  [[ -n "${BERTH_ADMIN_EMAIL:-}" ]] || return 0
  local label=berth.dev/first-admin user
  user=$(kubectl get users.berth.dev -o json |
    jq -r --arg email "$BERTH_ADMIN_EMAIL" '.items[] | select(.spec.email == $email) | .metadata.name' |
    head -n1)
  [[ -n "$user" ]] || return 0
  kubectl label users.berth.dev -l "$label" "$label-" >/dev/null
  kubectl label users.berth.dev "$user" "$label=true" >/dev/null
  kubectl -n berth-system create configmap berth-bootstrap --from-literal=createdAt=repaired \
    >/dev/null 2>&1 || true
}
