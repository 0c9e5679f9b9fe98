# shellcheck shell=bash
# hack/bench.sh databases: managed databases on the release berth-controller (issue 41).
#   1. Provision → first accepted connection: a DependencyResource (PostgreSQL, the stack's
#      Debian-built image) applied until `pg_isready` inside its container answers, against
#      `docker run` of the same image with the same variables and a new volume until the same
#      check answers (the local engine, no SSH: a stricter floor than through the tunnel).
#      Both sides poll the same way; medians of RUNS (default 3), alternating.
#   2. What idle databases cost: berth-controller's API requests and SSH channels per minute at
#      rest, with the server only and then with 20 databases (10 PostgreSQL, 10 Redis) ready
#      and passing Docker's health check (whose changes the server's observer hears: an idle
#      database costs no SSH channel).
# Exits non-zero when a goal is missed. Source after common.sh, berth.sh and bench-scale.sh.

DATABASES_NS=bench-databases
DATABASES_PORT=18960

# databases_ready CONTAINER: whether PostgreSQL in CONTAINER accepts connections.
databases_ready() { docker exec "$1" pg_isready -q -h 127.0.0.1 -U berth -d app 2>/dev/null; }

# databases_wait CONTAINER START: milliseconds from START (ms) until CONTAINER accepts.
databases_wait() {
  local container=$1 start=$2 deadline=$((SECONDS + 180))
  until databases_ready "$container"; do
    ((SECONDS < deadline)) || die "$container did not accept connections within 180 s"
    sleep 0.05
  done
  echo $(($(date +%s%3N) - start))
}

# databases_floor IMAGE N: docker run of IMAGE until it accepts; prints milliseconds.
databases_floor() {
  local image=$1 name=berth-bench-db-floor-$2 start ms
  start=$(date +%s%3N)
  docker run -d --name "$name" -v "$name:/var/lib/postgresql/data" \
    -e POSTGRES_PASSWORD=bench-only -e POSTGRES_USER=berth -e POSTGRES_DB=app "$image" >/dev/null
  ms=$(databases_wait "$name" "$start")
  docker rm -f "$name" >/dev/null
  docker volume rm "$name" >/dev/null
  echo "$ms"
}

# databases_apply NAME KIND IMAGE: a DependencyResource on the server `local`.
databases_apply() {
  kubectl -n "$DATABASES_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: DependencyResource
metadata: { name: $1, annotations: { berth.dev/delete-data: $1 } }
spec: { kind: $2, projectId: bench, environmentId: bench, serverId: local, name: $1, image: "$3" }
YAML
}

# databases_api_init: the API server's address, CA and token for databases_post.
databases_api_init() {
  DATABASES_API=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  DATABASES_CA=$(mktemp)
  kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$DATABASES_CA"
  DATABASES_TOKEN=$(kubectl config view --minify --raw -o jsonpath='{.users[0].user.token}')
}

# databases_post NAME IMAGE: creates a PostgreSQL DependencyResource with one API request
# (kubectl's own start, about 0.2 s, is not Berth's cost; the floor's docker CLI is cheaper).
databases_post() {
  local body
  body=$(jq -nc --arg name "$1" --arg image "$2" '{apiVersion: "berth.dev/v1alpha1",
    kind: "DependencyResource", metadata: {name: $name, annotations: {"berth.dev/delete-data": $name}},
    spec: {kind: "postgres", projectId: "bench", environmentId: "bench", serverId: "local",
           name: $name, image: $image}}')
  curl -fsS -o /dev/null --cacert "$DATABASES_CA" -H "Authorization: Bearer $DATABASES_TOKEN" \
    -H 'Content-Type: application/json' -d "$body" \
    "$DATABASES_API/apis/berth.dev/v1alpha1/namespaces/$DATABASES_NS/dependencyresources"
}

# databases_berth IMAGE N: a DependencyResource until its database accepts; prints ms.
databases_berth() {
  local image=$1 name=pg-$2 start ms
  start=$(date +%s%3N)
  databases_post "$name" "$image"
  until docker inspect "berth-dep-$DATABASES_NS-$name" >/dev/null 2>&1; do sleep 0.05; done
  ms=$(databases_wait "berth-dep-$DATABASES_NS-$name" "$start")
  kubectl -n "$DATABASES_NS" delete dependencyresource "$name" --timeout=120s >/dev/null
  echo "$ms"
}

# databases_all_ready N: waits until N DependencyResources say Ready (or 300 s pass).
databases_all_ready() {
  local expected=$1 deadline=$((SECONDS + 300)) ready
  while ((SECONDS < deadline)); do
    ready=$(kubectl -n "$DATABASES_NS" get dependencyresources.berth.dev -o json |
      jq '[.items[] | select(.status.lifecycleStatus == "ready")] | length')
    ((ready >= expected)) && return 0
    sleep 2
  done
  die "only $ready of $expected databases became ready within 300 s"
}

# databases_docker_healthy EXPECTED: waits until Docker reports EXPECTED of the benchmark's
# dependency containers healthy (their health check runs every 15 s).
databases_docker_healthy() {
  local expected=$1 deadline=$((SECONDS + 120)) healthy
  while ((SECONDS < deadline)); do
    healthy=$(docker ps --filter "label=berth.dev/namespace=$DATABASES_NS" \
      --filter label=berth.dev/dependency-resource --filter health=healthy -q | wc -l)
    ((healthy >= expected)) && return 0
    sleep 2
  done
  die "only $healthy of $expected database containers passed Docker's health check in 120 s"
}

databases_cleanup() {
  log "cleaning up namespace $DATABASES_NS"
  kubectl -n "$DATABASES_NS" delete dependencyresources.berth.dev --all --timeout=300s \
    >/dev/null 2>&1 || true
  kubectl -n "$DATABASES_NS" delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$DATABASES_NS" --wait=false >/dev/null 2>&1 || true
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller "$BERTH_RUN_DIR/controller.log" 9>&-
}

databases_median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

bench_databases() {
  local runs=${1:-3} failed=0 i floor=() berth=() image redis
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  scale_take_over "$DATABASES_NS"
  trap databases_cleanup EXIT
  bench_local_server "$DATABASES_NS" "$DATABASES_PORT"
  # The engine the `local` server reaches is this one: tagged here, nothing is pulled.
  image=127.0.0.1:5000/berth/postgres:15
  redis=127.0.0.1:5000/berth/redis:7
  docker tag berth/postgres:15 "$image"
  docker tag berth/redis:7 "$redis"

  databases_api_init
  log "provision → first accepted connection, $runs runs each"
  for ((i = 1; i <= runs; i++)); do
    floor+=("$(databases_floor "$image" "$i")")
    berth+=("$(databases_berth "$image" "$i")")
  done
  local floor_p50 berth_p50 ratio
  floor_p50=$(databases_median "${floor[@]}")
  berth_p50=$(databases_median "${berth[@]}")
  ratio=$(awk -v b="$berth_p50" -v f="$floor_p50" 'BEGIN {printf "%.2f", b / f}')
  echo "docker run → accepts: p50 $floor_p50 ms (all: ${floor[*]})"
  echo "Berth DependencyResource → accepts: p50 $berth_p50 ms (all: ${berth[*]})"

  log "at rest: the server only, then 20 databases"
  sleep 10
  scale_header
  scale_rest "server only"
  local requests_0=$SCALE_REQUESTS ssh_0=$SCALE_SSH
  for ((i = 1; i <= 10; i++)); do
    databases_apply "idle-pg-$i" postgres "$image"
    databases_apply "idle-redis-$i" redis "$redis"
  done
  databases_all_ready 20
  databases_docker_healthy 20
  sleep 10
  scale_rest "20 databases ready"
  local added=$((SCALE_REQUESTS - requests_0)) ssh_added=$((SCALE_SSH - ssh_0))
  echo
  scale_goal "provision → first accepted connection, Berth / docker run p50 (<= 1.5)" \
    "$ratio" 1.5 || failed=1
  scale_goal "API requests/min 20 idle databases add (<= 0)" "$added" 0 || failed=1
  scale_goal "SSH channels/min 20 idle databases add (<= 2)" "$ssh_added" 2 || failed=1
  return "$failed"
}
