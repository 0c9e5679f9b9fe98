# shellcheck shell=bash
# hack/bench.sh previews: preview environments per pull request, with the release
# berth-controller (as users run it) in the quickstart's organization (run hack/dev.sh first).
# One small Dockerfile app on the stack's git server, its build cache warm; in one run:
#   - push to serving (the baseline): a commit pushed to main and its signed push webhook
#     delivered, until the new page answers through the edge proxy, p50;
#   - PR opened to preview serving: a branch pushed and a signed `pull_request` (opened)
#     delivered, until the PR's page answers at pr-<n>-<slug>, p50 (reported beside the push);
#   - PR closed to clean: a signed `pull_request` (closed) delivered, until the preview object,
#     everything with its label (objects, containers, networks, volumes) and its route are gone
#     (the host answers 404), p50; goal <= 60 s.

PREVIEW_NS=org-acme
PREVIEW_RESOURCE=bench-preview

# preview_pull_request ACTION NUMBER SHA URL: a GitHub pull_request payload.
preview_pull_request() {
  jq -cn --arg action "$1" --argjson number "$2" --arg sha "$3" --arg url "$4" \
    '{action: $action, number: $number,
      pull_request: {number: $number,
        head: {ref: ("pr-" + ($number | tostring)), sha: $sha, repo: {full_name: "stack/bench", clone_url: $url}},
        base: {ref: "main", repo: {full_name: "stack/bench", clone_url: $url}}},
      repository: {full_name: "stack/bench", clone_url: $url}}'
}

# preview_until_page HOST PORT TEXT: until HOST answers with TEXT through the edge proxy.
preview_until_page() {
  until curl -fsS --max-time 2 --resolve "$1:$2:127.0.0.1" "http://$1:$2/" 2>/dev/null |
    grep -q "$3<"; do
    sleep 0.05
  done
}

# preview_cleaned NAME HOST PORT: whether nothing of preview NAME is left and HOST is 404.
preview_cleaned() {
  local label="berth.dev/preview-environment=$1" code
  kubectl -n "$PREVIEW_NS" get previewenvironment.berth.dev "$1" >/dev/null 2>&1 && return 1
  [[ -z $(kubectl -n "$PREVIEW_NS" get resources.berth.dev,environments.berth.dev,deployments.berth.dev,secrets \
    -l "$label" -o name 2>/dev/null) ]] || return 1
  [[ -z $(docker ps -aq --filter "label=berth.dev/resource=$1") ]] || return 1
  [[ -z $(docker ps -aq --filter "label=$label") ]] || return 1
  [[ -z $(docker network ls -q --filter "label=$label") ]] || return 1
  [[ -z $(docker volume ls -q --filter "label=$label") ]] || return 1
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --resolve "$2:$3:127.0.0.1" "http://$2:$3/")
  [[ $code == 404 ]]
}

bench_previews() {
  local runs=${1:-5}
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  kubectl get namespace "$PREVIEW_NS" >/dev/null 2>&1 || die "run hack/dev.sh first (the quickstart's organization)"
  log "building berth-controller (release, as users run it) and berth-shim"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-controller --bin berth-controller)
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-apiserver-shim)
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/release berth_start_controller "$BERTH_RUN_DIR/bench-previews-controller.log"
  shim_ready || berth_start_shim "$BERTH_RUN_DIR/shim.log"
  local work secret repo url port
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: what this run made
  trap "kubectl -n $PREVIEW_NS delete previewenvironments.berth.dev -l berth.dev/preview-of=$PREVIEW_RESOURCE --wait=false >/dev/null 2>&1 || true; \
    kubectl -n $PREVIEW_NS delete resource.berth.dev,previewpolicy.berth.dev $PREVIEW_RESOURCE --wait=false >/dev/null 2>&1 || true; \
    BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller $BERTH_RUN_DIR/controller.log; \
    rm -rf $work" EXIT
  repo=$(build_repo "$work/app")
  url="$BERTH_GIT_HTTP_URL/$repo.git"
  secret=$(openssl rand -hex 32)
  port=$(kubectl -n "$PREVIEW_NS" get server.berth.dev local -o jsonpath='{.spec.proxy.httpPort}')
  kubectl -n "$PREVIEW_NS" delete secret "$PREVIEW_RESOURCE-webhook" --ignore-not-found >/dev/null
  kubectl -n "$PREVIEW_NS" create secret generic "$PREVIEW_RESOURCE-webhook" --from-literal=secret="$secret" >/dev/null
  kubectl apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: $PREVIEW_RESOURCE, namespace: $PREVIEW_NS }
spec:
  projectId: shop
  environmentId: shop-production
  serverId: local
  name: $PREVIEW_RESOURCE
  kind: application
  source: { kind: git-public, locator: "$url", gitRef: main }
  networkProfile: { internalPort: 8080 }
  runtimeProfile: { healthCheck: { path: /, intervalSeconds: 1, retries: 2 } }
  autoDeploy: { enabled: true, refs: [refs/heads/main] }
---
# The resource's own policy, with the defaults: whatever policy the project has (the reference
# example's asks for a host name under example.com) does not apply to the bench.
apiVersion: berth.dev/v1alpha1
kind: PreviewPolicy
metadata: { name: $PREVIEW_RESOURCE, namespace: $PREVIEW_NS }
spec:
  projectId: shop
  resourceId: $PREVIEW_RESOURCE
YAML
  log "first deployment of $repo (a cold build)"
  build_wait_succeeded "dep-$PREVIEW_RESOURCE-1"

  local i start sha body
  for ((i = 1; i <= runs; i++)); do
    # The baseline: a push to main until its page serves.
    git -C "$work/app" checkout -q main
    echo "<h1>bench main $i</h1>" >"$work/app/www/index.html"
    git -C "$work/app" -c user.name=Bench -c user.email=bench@berth.local commit -qam "main $i"
    start=$(date +%s%N)
    git -C "$work/app" push -q "$BERTH_GIT_ROOT/$repo.git" main
    sha=$(git -C "$work/app" rev-parse HEAD)
    body=$(jq -cn --arg sha "$sha" --arg url "$url" '{ref: "refs/heads/main", after: $sha, repository: {clone_url: $url}}')
    github_deliver push "$body" "$secret"
    preview_until_page "$PREVIEW_RESOURCE.localhost" "$port" "bench main $i"
    build_ms "$start" >>"$work/push.ms"

    # A pull request opened until its preview serves.
    git -C "$work/app" checkout -q -b "pr-$i"
    echo "<h1>bench preview $i</h1>" >"$work/app/www/index.html"
    git -C "$work/app" -c user.name=Bench -c user.email=bench@berth.local commit -qam "preview $i"
    start=$(date +%s%N)
    git -C "$work/app" push -q "$BERTH_GIT_ROOT/$repo.git" "pr-$i"
    sha=$(git -C "$work/app" rev-parse HEAD)
    github_deliver pull_request "$(preview_pull_request opened "$i" "$sha" "$url")" "$secret"
    preview_until_page "pr-$i-$PREVIEW_RESOURCE.localhost" "$port" "bench preview $i"
    build_ms "$start" >>"$work/opened.ms"

    # Closed until nothing of it is left.
    start=$(date +%s%N)
    github_deliver pull_request "$(preview_pull_request closed "$i" "$sha" "$url")" "$secret"
    until preview_cleaned "$PREVIEW_RESOURCE-pr-$i" "pr-$i-$PREVIEW_RESOURCE.localhost" "$port"; do
      sleep 0.1
    done
    build_ms "$start" >>"$work/closed.ms"
  done

  local push_p50 opened_p50 closed_p50 failed=0
  push_p50=$(build_p50 "$work/push.ms")
  opened_p50=$(build_p50 "$work/opened.ms")
  closed_p50=$(build_p50 "$work/closed.ms")
  echo "Preview environments, $runs pull requests, $(nproc) cores, release berth-controller:"
  echo "  push to serving (baseline)           p50 ${push_p50} ms   $(paste -sd' ' "$work/push.ms")"
  echo "  PR opened to preview serving         p50 ${opened_p50} ms   $(paste -sd' ' "$work/opened.ms")"
  build_goal "ratio opened / push" \
    "$(awk -v a="$opened_p50" -v b="$push_p50" 'BEGIN {printf "%.2f", a / b}')" 1.5 x || failed=1
  echo "  PR closed to clean                   $(paste -sd' ' "$work/closed.ms")"
  build_goal "PR closed to clean p50" "$closed_p50" 60000 " ms" || failed=1
  return "$failed"
}
