# shellcheck shell=bash
# hack/bench.sh in-cluster [RUNS]: Berth as pods on the stack's node (hack/stack.sh node up),
# from release images (what users run), with the quickstart applied:
#   image sizes (goal: at most 60 MB each)
#   seconds from each pod's creation to Ready (goal: each at most 30, the images loaded already)
#   failover, RUNS times each (default 5): the Lease holder's pod deleted (SIGTERM: it releases
#     the Lease) and its container killed with SIGKILL (a crash: it cannot; a pod deleted with
#     --force still gets SIGTERM first), seconds until the other replica holds the Lease; p50
#     against the Lease's duration, the longest a standby waits for a holder that is gone
#     (goal: p50 at most 15 s); and seconds until the new leader's first reconcile of the
#     quickstart's Resource, changed right after the pod's deletion (its status's
#     observedGeneration; goal: p50 at most the Lease's duration + 5 s)
#   memory of each pod at rest (goals: at most 64 MiB shim, 96 MiB controller)
# Afterwards Berth runs as processes again (hack/dev.sh's way). Source after common.sh.

IN_CLUSTER_BENCH_TAG=bench

in_cluster_bench_images() {
  log "building berth-controller and berth-shim (release) and their images"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-controller \
    -p berth-apiserver-shim --bin berth-controller --bin berth-shim)
  "$HACK_DIR/images.sh" berth release "$IN_CLUSTER_BENCH_TAG"
}

in_cluster_bench_holder() {
  kubectl -n berth-system get lease berth-controller -o jsonpath='{.spec.holderIdentity}'
}

# in_cluster_failover MODE: two figures (seconds, 3 decimals) from deleting the holder's pod:
# until the other replica holds the Lease, and until the new leader's first reconcile, of the
# quickstart's Resource changed at that moment (its status.observedGeneration reaching the new
# generation).
in_cluster_failover() {
  local holder now started generation holder_at="" reconciled_at="" seen
  kubectl -n berth-system rollout status deploy/berth-controller --timeout=240s >/dev/null
  holder=$(in_cluster_bench_holder)
  started=$(date +%s%3N)
  if [[ "$1" == kill ]]; then
    # The pod goes too, or its container would restart in place and take its Lease back.
    docker kill -s KILL "$(docker ps -q --filter "label=io.kubernetes.pod.name=$holder" \
      --filter label=io.kubernetes.container.name=controller)" >/dev/null
    kubectl -n berth-system delete pod "$holder" --force --grace-period=0 >/dev/null 2>&1
  else
    kubectl -n berth-system delete pod "$holder" --wait=false >/dev/null
  fi
  generation=$(kubectl -n org-acme patch resource.berth.dev sample-app --type merge \
    -p "{\"spec\":{\"description\":\"changed during failover $started\"}}" \
    -o jsonpath='{.metadata.generation}')
  while [[ -z "$holder_at" || -z "$reconciled_at" ]]; do
    (($(date +%s%3N) - started > 120000)) && die "no new Lease holder or no reconcile within 120 s"
    if [[ -z "$holder_at" ]] && now=$(in_cluster_bench_holder) && [[ -n "$now" && "$now" != "$holder" ]]; then
      holder_at=$(date +%s%3N)
    fi
    seen=$(kubectl -n org-acme get resource.berth.dev sample-app -o jsonpath='{.status.observedGeneration}')
    if [[ -z "$reconciled_at" && "$seen" == "$generation" ]]; then
      reconciled_at=$(date +%s%3N)
    fi
    sleep 0.05
  done
  echo "$(echo "scale=3; ($holder_at - $started) / 1000" | bc)" \
    "$(echo "scale=3; ($reconciled_at - $started) / 1000" | bc)"
}

in_cluster_p50() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# MiB of the pods' main containers, one line per pod: NAME MIB.
in_cluster_memory() {
  local app=$1 name
  for name in $(docker ps --filter "label=io.kubernetes.container.name=$app" \
    --filter label=io.kubernetes.pod.namespace=berth-system --format '{{.Names}}'); do
    docker stats --no-stream --format '{{.MemUsage}}' "$name" |
      awk -v n="$name" '{ v = $1; m = v + 0; if (v ~ /GiB/) m *= 1024; else if (v ~ /KiB/) m /= 1024; printf "%s %.1f\n", n, m }'
  done
}

bench_in_cluster() {
  local runs=${1:-5} failed=0
  ensure_packages bc:bc
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/in-cluster.sh"
  berth_build
  in_cluster_bench_images
  berth_install_crds
  berth_install_rbac
  exec 9>"$BERTH_STACK_DIR/integration.lock"
  flock 9
  berth_stop_shim
  berth_stop_controller
  in_cluster_up
  in_cluster_apply
  kubectl -n berth-system set image deploy/berth-controller \
    "controller=berth/controller:$IN_CLUSTER_BENCH_TAG" >/dev/null
  kubectl -n berth-system set image deploy/berth-shim "shim=berth/shim:$IN_CLUSTER_BENCH_TAG" >/dev/null
  kubectl -n berth-system rollout status deploy/berth-controller --timeout=240s >&2
  kubectl -n berth-system rollout status deploy/berth-shim --timeout=240s >&2
  BERTH_URL=$(in_cluster_url)
  berth_bootstrap_admin
  berth_quickstart_secret
  kubectl apply --server-side -k "$HACK_DIR/in-cluster/quickstart" >/dev/null
  kubectl kustomize "$HACK_DIR/in-cluster/quickstart" |
    kubectl wait --for=condition=Ready --timeout=240s -f - >/dev/null

  echo
  echo "Berth in the cluster ($(nproc) cores, release images :$IN_CLUSTER_BENCH_TAG)"
  local image size
  for image in controller shim; do
    size=$(docker image inspect -f '{{.Size}}' "berth/$image:$IN_CLUSTER_BENCH_TAG")
    size=$((size / 1000000))
    echo "image berth/$image: $size MB (goal: at most 60)"
    ((size <= 60)) || failed=1
  done
  local ready_secs slowest
  ready_secs=$(kubectl -n berth-system get pods -o json | jq -r '
    [.items[] | select(.metadata.deletionTimestamp == null)
     | (.status.conditions[] | select(.type == "Ready" and .status == "True")
        | .lastTransitionTime | fromdate) - (.metadata.creationTimestamp | fromdate)
     | tostring] | join(" ")')
  slowest=$(tr ' ' '\n' <<<"$ready_secs" | sort -n | tail -1)
  echo "pod creation to Ready (s): $ready_secs; slowest $slowest (goal: each at most 30)"
  awk -v s="${slowest:-999}" 'BEGIN { exit !(s <= 30) }' || failed=1

  log "memory at rest: 30 s after the quickstart is Ready"
  sleep 30
  local name mib
  while read -r name mib; do
    local goal=96
    [[ "$name" == k8s_shim* ]] && goal=64
    echo "memory ${name%%_berth-*}: $mib MiB (goal: at most $goal)"
    awk -v m="$mib" -v g="$goal" 'BEGIN { exit !(m <= g) }' || failed=1
  done < <(in_cluster_memory controller; in_cluster_memory shim)

  local mode p50 all lease
  lease=$(kubectl -n berth-system get deploy berth-controller -o \
    jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="BERTH_LEASE_SECONDS")].value}')
  lease=${lease:-15}
  local reconciled first
  for mode in delete kill; do
    all=$(for _ in $(seq 1 "$runs"); do in_cluster_failover "$mode"; done)
    p50=$(cut -d' ' -f1 <<<"$all" | in_cluster_p50)
    first=$(cut -d' ' -f2 <<<"$all" | in_cluster_p50)
    reconciled=$(cut -d' ' -f2 <<<"$all" | tr '\n' ' ')
    echo "failover after a $mode of the leader's pod (s): $(cut -d' ' -f1 <<<"$all" | tr '\n' ' ')p50 $p50;" \
      "ratio to the Lease's $lease s: $(echo "scale=2; $p50 / $lease" | bc) (goal: p50 at most 15 s)"
    echo "  to the new leader's first reconcile of a Resource changed meanwhile (s): ${reconciled}p50 $first" \
      "(goal: p50 at most $((lease + 5)) s)"
    awk -v p="$p50" 'BEGIN { exit !(p <= 15) }' || failed=1
    awk -v p="$first" -v g="$((lease + 5))" 'BEGIN { exit !(p <= g) }' || failed=1
  done

  in_cluster_remove
  "$HACK_DIR/stack.sh" node down 9>&-
  exec 9>&-
  log "Berth as processes again: run hack/dev.sh"
  return "$failed"
}
