# shellcheck shell=bash
# hack/bench.sh build: deploying from a repository, with the release berth-controller (as users
# run it) in the quickstart's organization (run hack/dev.sh first). In one run, each p50:
#   - a real rebuild: one source file changed in a new commit, pushed and announced by a signed
#     GitHub webhook; the attempt's package phase (fetch, build on the server's Docker, its
#     layer cache warm) from its timeline, against a plain `docker build` of the same commit's
#     files through an SSH tunnel to the same Docker (OpenSSH's socket forwarding, the legacy
#     builder, its cache warm), alternating; fails above 1.2x. The bench waits for the attempt
#     on a watch (`kubectl wait`), so both builds run on an equally quiet machine;
#   - push to serving, in runs of their own: from `git push` until the new page answers
#     through the edge proxy (asked every 50 ms, which loads the machine); fails above 15 s;
#   - reuse of an unchanged image: a new attempt of the same commit (fetch, then the image
#     found by its build key), against the same plain build of unchanged files; fails above
#     1.2x.

BUILD_NS=org-acme
BUILD_RESOURCE=bench-build

build_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# build_p50 FILE: the median of the numbers in FILE.
build_p50() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# build_repo DIR: a small web app (a Dockerfile, 200 files to upload) committed to a bare
# repository of the stack's git server; prints its name.
build_repo() {
  local work=$1 name
  name="bench-build-$RANDOM"
  mkdir -p "$work/www"
  cat >"$work/Dockerfile" <<'DOCKERFILE'
FROM berth/busybox:1
COPY www/ /www/
RUN ls /www | wc -l > /www/count.txt
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & trap 'exit 0' TERM; wait"]
DOCKERFILE
  local i
  for ((i = 0; i < 200; i++)); do head -c 2048 /dev/urandom | base64 >"$work/www/asset-$i.txt"; done
  echo "<h1>bench build 0</h1>" >"$work/www/index.html"
  git -C "$work" init -q -b main
  git -C "$work" add -A
  git -C "$work" -c user.name=Bench -c user.email=bench@berth.local commit -qm "bench app"
  git init -q --bare -b main "$BERTH_GIT_ROOT/$name.git"
  git -C "$work" push -q "$BERTH_GIT_ROOT/$name.git" main
  echo "$name"
}

# build_commit APP N: commits page N of the app.
build_commit() {
  echo "<h1>bench build $2</h1>" >"$1/www/index.html"
  git -C "$1" -c user.name=Bench -c user.email=bench@berth.local commit -qam "page $2"
}

# build_timeline_ms DEPLOYMENT TOKEN [FILE]: the package phase of an attempt, from its
# timeline (kept in FILE when given).
build_timeline_ms() {
  local timeline
  timeline=$(curl -fsS -H "Authorization: Bearer $2" \
    "$BERTH_URL/resources/$BUILD_RESOURCE/deployments/$1/timeline?limit=1000")
  [[ -z "${3:-}" ]] || printf '%s\n' "$timeline" >"$3"
  local start end
  start=$(jq -r '[.entries[] | select(.phase == "package")][0].timestamp' <<<"$timeline")
  end=$(jq -r '[.entries[] | select(.phase == "deploy")][0].timestamp' <<<"$timeline")
  echo $((($(date -d "$end" +%s%N) - $(date -d "$start" +%s%N)) / 1000000))
}

# build_wait_succeeded DEPLOYMENT: until the attempt ended; fails unless it succeeded.
build_wait_succeeded() {
  local status
  for _ in $(seq 1 600); do
    status=$(kubectl -n "$BUILD_NS" get deployment.berth.dev "$1" -o jsonpath='{.status.status}' 2>/dev/null || true)
    case "$status" in
      succeeded) return 0 ;;
      failed | canceled | rolled-back) die "attempt $1 ended $status" ;;
    esac
    sleep 0.2
  done
  die "attempt $1 did not end"
}

# build_newest_attempt: the name of the bench resource's newest attempt.
build_newest_attempt() {
  kubectl -n "$BUILD_NS" get deployment.berth.dev -l "berth.dev/resource=$BUILD_RESOURCE" \
    --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].metadata.name}'
}

# build_attempt_after NAME: the newest attempt once it is another than NAME (up to 10 s).
build_attempt_after() {
  local newest
  for _ in $(seq 1 50); do
    newest=$(build_newest_attempt)
    [[ "$newest" == "$1" ]] || { echo "$newest"; return 0; }
    sleep 0.2
  done
  return 1
}

# github_deliver EVENT BODY SECRET: a signed GitHub delivery of EVENT (the previews bench too).
github_deliver() {
  local signature
  signature=$(printf %s "$2" | openssl dgst -sha256 -hmac "$3" -r | cut -d' ' -f1)
  curl -fsS -o /dev/null -X POST -H 'Content-Type: application/json' -H "X-GitHub-Event: $1" \
    -H "X-GitHub-Delivery: bench-$RANDOM$RANDOM" -H "X-Hub-Signature-256: sha256=$signature" \
    -d "$2" "$BERTH_URL/webhooks/github"
}

# build_push APP REPO SECRET: pushes APP's HEAD to the stack's git server and delivers its
# signed GitHub push webhook.
build_push() {
  local app=$1 repo=$2 sha body
  git -C "$app" push -q "$BERTH_GIT_ROOT/$repo.git" main
  sha=$(git -C "$app" rev-parse HEAD)
  body=$(jq -cn --arg sha "$sha" --arg url "$BERTH_GIT_HTTP_URL/$repo.git" \
    '{ref: "refs/heads/main", after: $sha, repository: {clone_url: $url}}')
  github_deliver push "$body" "$3"
}

# build_split TIMELINE: the package phase of an attempt's timeline (JSON) in three parts: the
# fetch and the files read until the build starts, the build (upload, every step, tagged), and
# what follows until the container starts.
build_split() {
  jq -r '
    def ms: sub("Z$"; "") | split(".") | (.[0] + "Z" | fromdate) * 1000 + (.[1] | tonumber);
    [.entries[] | select(.phase == "package")] as $p
    | ([.entries[] | select(.phase == "deploy")][0].timestamp | ms) as $deploy
    | ($p[0].timestamp | ms) as $start
    | ([$p[] | select(.message | startswith("Building"))][0].timestamp | ms) as $build
    | ([$p[] | select(.message | startswith("Successfully tagged"))][0].timestamp | ms) as $tagged
    | "fetch and files \($build - $start) ms, build \($tagged - $build) ms, then \($deploy - $tagged) ms"
  ' "$1"
}

# build_goal TEXT VALUE LIMIT UNIT: prints the figure beside its goal; fails above the limit.
build_goal() {
  if awk -v v="$2" -v l="$3" 'BEGIN {exit !(v <= l)}'; then
    echo "  $1: $2$4 PASS (goal <= $3$4)"
  else
    echo "  $1: $2$4 FAIL (goal <= $3$4)"
    return 1
  fi
}

# build_report WORK RUNS: the p50s of the run and whether each met its goal.
build_report() {
  local work=$1 runs=$2 failed=0 rebuild floor push reuse floor_unchanged
  rebuild=$(build_p50 "$work/rebuild.ms")
  floor=$(build_p50 "$work/floor.ms")
  push=$(build_p50 "$work/push.ms")
  reuse=$(build_p50 "$work/reuse.ms")
  floor_unchanged=$(build_p50 "$work/floor-unchanged.ms")
  echo "Deploying from a repository, $runs runs each, $(nproc) cores, release berth-controller:"
  echo "  rebuild of a new commit, one file changed (package)  p50 ${rebuild} ms   $(paste -sd' ' "$work/rebuild.ms")"
  echo "  plain docker build of the same commit over SSH        p50 ${floor} ms   $(paste -sd' ' "$work/floor.ms")"
  build_goal "rebuild against the plain build" \
    "$(awk -v a="$rebuild" -v b="$floor" 'BEGIN {printf "%.2f", a / b}')" 1.2 x || failed=1
  echo "  where the last rebuild's package phase went: $(build_split "$work/rebuild-timeline.json")"
  echo "  push to serving (push, webhook, fetch, build, switch)  $(paste -sd' ' "$work/push.ms")"
  build_goal "push to serving p50" "$push" 15000 " ms" || failed=1
  echo "  reuse of an unchanged commit's image (package)      p50 ${reuse} ms   $(paste -sd' ' "$work/reuse.ms")"
  echo "  plain docker build of unchanged files over SSH       p50 ${floor_unchanged} ms   $(paste -sd' ' "$work/floor-unchanged.ms")"
  build_goal "reuse against the plain build" \
    "$(awk -v a="$reuse" -v b="$floor_unchanged" 'BEGIN {printf "%.2f", a / b}')" 1.2 x || failed=1
  return "$failed"
}

bench_build() {
  local runs=${1:-5}
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  kubectl get namespace "$BUILD_NS" >/dev/null 2>&1 || die "run hack/dev.sh first (the quickstart's organization)"
  # shellcheck disable=SC1090
  source "$BERTH_ADMIN_ENV"
  log "building berth-controller (release, as users run it) and berth-shim"
  (cd "$HACK_DIR/.." && cargo build --quiet --release -p berth-controller --bin berth-controller)
  (cd "$HACK_DIR/.." && cargo build --quiet --bins -p berth-apiserver-shim)
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/release berth_start_controller "$BERTH_RUN_DIR/bench-build-controller.log"
  shim_ready || berth_start_shim "$BERTH_RUN_DIR/shim.log"
  local work secret token repo port floor_home
  work=$(mktemp -d)
  floor_home=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: what this run made
  trap "kubectl -n $BUILD_NS delete resource.berth.dev $BUILD_RESOURCE --wait=false >/dev/null 2>&1 || true; \
    BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller $BERTH_RUN_DIR/controller.log; \
    rm -rf $work $floor_home" EXIT
  repo=$(build_repo "$work/app")
  secret=$(openssl rand -hex 32)
  token=$(jq -n --arg e "$BERTH_ADMIN_EMAIL" --arg p "$BERTH_ADMIN_PASSWORD" '{email: $e, password: $p}' |
    curl -fsS -X POST -H 'Content-Type: application/json' -d @- "$BERTH_URL/auth/login" | jq -r .token)
  port=$(kubectl -n "$BUILD_NS" get server.berth.dev local -o jsonpath='{.spec.proxy.httpPort}')
  kubectl -n "$BUILD_NS" delete secret "$BUILD_RESOURCE-webhook" --ignore-not-found >/dev/null
  kubectl -n "$BUILD_NS" create secret generic "$BUILD_RESOURCE-webhook" --from-literal=secret="$secret" >/dev/null
  kubectl apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: $BUILD_RESOURCE, namespace: $BUILD_NS }
spec:
  projectId: shop
  environmentId: shop-production
  serverId: local
  name: $BUILD_RESOURCE
  kind: application
  source: { kind: git-public, locator: "$BERTH_GIT_HTTP_URL/$repo.git", gitRef: main }
  networkProfile: { internalPort: 8080 }
  runtimeProfile: { healthCheck: { path: /, intervalSeconds: 1, retries: 2 } }
  autoDeploy: { enabled: true, refs: [refs/heads/main] }
YAML
  log "first deployment of $repo (a cold build)"
  build_wait_succeeded "dep-$BUILD_RESOURCE-1"

  # The floor: the docker CLI through an SSH tunnel to the same Docker socket (OpenSSH's
  # streamlocal forwarding, kept open like Berth's connection).
  local tunnel=$floor_home/docker.sock
  ssh -i "$BERTH_SSH_KEY" -p "$BERTH_SSH_PORT" -o UserKnownHostsFile="$BERTH_SSH_KNOWN_HOSTS" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ExitOnForwardFailure=yes -N \
    -L "$tunnel:/var/run/docker.sock" root@127.0.0.1 &
  local tunnel_pid=$!
  # shellcheck disable=SC2064 # expand now: what this run made
  trap "kill $tunnel_pid 2>/dev/null; $(trap -p EXIT | sed "s/^trap -- '//; s/' EXIT$//")" EXIT
  wait_for 10 "the SSH tunnel to Docker" test -S "$tunnel"
  local context=$work/context
  git -C "$work/app" archive --format=tar HEAD | (mkdir -p "$context" && tar -C "$context" -x)
  floor_build() {
    DOCKER_BUILDKIT=0 DOCKER_HOST=unix://$tunnel \
      docker build -q -t bench-build-floor:1 "$context" >/dev/null 2>&1
  }
  floor_build # warm its layer cache
  local i start generation deployment
  for ((i = 1; i <= runs; i++)); do
    generation=$(kubectl -n "$BUILD_NS" patch resource.berth.dev "$BUILD_RESOURCE" --type merge \
      -p "{\"spec\":{\"description\":\"warm $i\"}}" -o jsonpath='{.metadata.generation}')
    deployment=dep-$BUILD_RESOURCE-$generation
    build_wait_succeeded "$deployment"
    build_timeline_ms "$deployment" "$token" >>"$work/reuse.ms"
    start=$(date +%s%N)
    floor_build
    build_ms "$start" >>"$work/floor-unchanged.ms"
  done

  # A real rebuild: a new page committed, pushed and announced by a signed webhook; then the
  # plain build of the same commit's files.
  local before revision=0
  for ((i = 1; i <= runs; i++)); do
    before=$(build_newest_attempt)
    revision=$((revision + 1))
    build_commit "$work/app" "$revision"
    build_push "$work/app" "$repo" "$secret"
    deployment=$(build_attempt_after "$before") || die "push $i started no attempt"
    kubectl -n "$BUILD_NS" wait --for=jsonpath='{.status.finishedAt}' --timeout=300s \
      "deployment.berth.dev/$deployment" >/dev/null
    build_wait_succeeded "$deployment"
    build_timeline_ms "$deployment" "$token" "$work/rebuild-timeline.json" >>"$work/rebuild.ms"
    cp "$work/rebuild-timeline.json" "$BERTH_RUN_DIR/bench-build-timeline-$i.json"
    rm -rf "$context" && mkdir -p "$context"
    git -C "$work/app" archive --format=tar HEAD | tar -C "$context" -x
    start=$(date +%s%N)
    floor_build
    build_ms "$start" >>"$work/floor.ms"
  done

  # Push to serving, as a person watching the page sees it.
  for ((i = 1; i <= runs; i++)); do
    revision=$((revision + 1))
    build_commit "$work/app" "$revision"
    start=$(date +%s%N)
    build_push "$work/app" "$repo" "$secret"
    until curl -fsS --max-time 2 --resolve "$BUILD_RESOURCE.localhost:$port:127.0.0.1" \
      "http://$BUILD_RESOURCE.localhost:$port/" 2>/dev/null | grep -q "bench build $revision<"; do
      sleep 0.05
    done
    build_ms "$start" >>"$work/push.ms"
    build_wait_succeeded "$(build_newest_attempt)"
  done
  build_report "$work" "$runs"
}
