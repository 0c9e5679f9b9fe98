# shellcheck shell=bash
# hack/bench.sh schedules: scheduled tasks on the release berth-controller (issue 43).
#   1. What idle tasks cost: berth-controller's API requests/min and CPU at rest with one
#      deployed app, then with 100 tasks whose next slot is an hour away (a timer each; no
#      polling). The retention policies' hourly runs are left out of both figures.
#   2. Slot → container started: 20 tasks on `* * * * *` share one slot; for each run, the
#      seconds from its slot to its container's start as Docker records it. The floor, measured
#      in the same run: `docker run -d` of the same image on the local engine (no SSH, no API
#      server), from the command to the container's start.
#   3. Event → webhook delivered: 20 runs of a task fail by hand; for each, from the run's
#      `finishedAt` (the failure the controller records) until a webhook receiver on loopback
#      has the `scheduled-task-failed` message.
# Exits non-zero when a goal is missed. Source after common.sh, berth.sh and bench-scale.sh.

SCHEDULES_NS=bench-schedules
SCHEDULES_PORT=18980
SCHEDULES_BURST=20

# schedules_app: the sample app deployed as `web` (the tasks run its image).
schedules_app() {
  kubectl -n "$SCHEDULES_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: Resource
metadata: { name: web }
spec:
  projectId: bench
  environmentId: bench
  serverId: local
  name: web
  kind: application
  source: { kind: docker-image, locator: berth/sample-app:1 }
  networkProfile: { internalPort: 8080 }
  runtimeProfile: { healthCheck: { path: /healthz, intervalSeconds: 1, retries: 30 } }
  autoDeploy: { enabled: true }
YAML
  kubectl -n "$SCHEDULES_NS" wait --for=condition=Ready resource/web --timeout=180s >/dev/null ||
    die "the app did not become Ready"
}

# schedules_task NAME SCHEDULE COMMAND: a task of `web`.
schedules_task() {
  cat <<YAML
---
apiVersion: berth.dev/v1alpha1
kind: ScheduledTask
metadata: { name: $1 }
spec: { resourceId: web, schedule: "$2", command: "$3", timeoutSeconds: 120 }
YAML
}

# schedules_floor N: N `docker run -d` of the image started at once on the local engine; prints,
# per container, milliseconds from that moment to its start as Docker records it.
schedules_floor() {
  local n=$1 start i started
  start=$(date +%s%3N)
  for ((i = 1; i <= n; i++)); do
    docker run -d --name "berth-bench-task-floor-$i" berth/sample-app:1 sleep 20 >/dev/null &
  done
  wait
  for ((i = 1; i <= n; i++)); do
    started=$(docker inspect -f '{{.State.StartedAt}}' "berth-bench-task-floor-$i")
    echo $(($(date -d "$started" +%s%3N) - start))
    docker rm -f "berth-bench-task-floor-$i" >/dev/null
  done
}

# schedules_latencies: for each burst run's container, milliseconds from its slot to its start.
schedules_latencies() {
  local container run slot started
  for container in $(docker ps -aq --filter "label=berth.dev/namespace=$SCHEDULES_NS" \
    --filter label=berth.dev/scheduled-task-run); do
    run=$(docker inspect -f '{{index .Config.Labels "berth.dev/scheduled-task-run"}}' "$container")
    started=$(docker inspect -f '{{.State.StartedAt}}' "$container")
    slot=$(kubectl -n "$SCHEDULES_NS" get scheduledtaskrun "$run" -o jsonpath='{.spec.scheduledFor}')
    echo $(($(date -d "$started" +%s%3N) - $(date -d "$slot" +%s%3N)))
  done
}

# schedules_receiver FILE: a webhook receiver on 127.0.0.1:SCHEDULES_HOOK_PORT appending
# "<arrival ms> <body>" per request to FILE; prints its pid.
SCHEDULES_HOOK_PORT=18990
schedules_receiver() {
  python3 - "$1" "$SCHEDULES_HOOK_PORT" >/dev/null 2>&1 <<'PY' &
import http.server, sys, time
out, port = sys.argv[1], int(sys.argv[2])
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(out, "a") as f:
            f.write(f"{int(time.time() * 1000)} {body.decode()}\n")
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Hook).serve_forever()
PY
  echo $!
}

# schedules_notify_latencies FILE: per failed run, ms from its finishedAt to its webhook.
schedules_notify_latencies() {
  local arrived body run finished
  while read -r arrived body; do
    run=$(jq -r 'select(.event == "scheduled-task-failed") | .subject.name' <<<"$body")
    [[ -n "$run" ]] || continue
    finished=$(kubectl -n "$SCHEDULES_NS" get scheduledtaskrun "$run" -o jsonpath='{.status.finishedAt}')
    echo $((arrived - $(date -d "$finished" +%s%3N)))
  done <"$1"
}

schedules_percentile() {
  printf '%s\n' "${@:2}" | sort -n | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100+0.999); if (i<1) i=1; print a[i]}'
}

schedules_cleanup() {
  log "cleaning up namespace $SCHEDULES_NS"
  kubectl -n "$SCHEDULES_NS" delete scheduledtasks.berth.dev --all --timeout=120s >/dev/null 2>&1 || true
  kubectl -n "$SCHEDULES_NS" delete resources.berth.dev --all --timeout=120s >/dev/null 2>&1 || true
  kubectl -n "$SCHEDULES_NS" delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$SCHEDULES_NS" --wait=false >/dev/null 2>&1 || true
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller "$BERTH_RUN_DIR/controller.log" 9>&-
}

# schedules_requests_per_minute: berth-controller's requests in the last scale_rest window, per
# minute, but those of the retention policies' hourly runs (a status write and an Event each):
# they come on a timer of their own and may fall in either window, which is not what idle tasks
# cost. scale_rest prints them all.
schedules_requests_per_minute() {
  awk -v RS=', ' -v window="$SCALE_WINDOW" -v all="$SCALE_REQUESTS" '
    { n = $0; sub(/.*\+/, "", n) }
    /:retentionpolicies/ { runs += n }
    /:events/ { events += n }
    END {
      timers = runs + (events < runs ? events : runs)
      printf "%d\n", all - timers * 60 / window
    }' <<<"$SCALE_SOURCES"
}

bench_schedules() {
  local failed=0 i later floor=() latencies=()
  stack_env
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  scale_take_over "$SCHEDULES_NS"
  trap schedules_cleanup EXIT
  bench_local_server "$SCHEDULES_NS" "$SCHEDULES_PORT"
  schedules_app

  log "at rest: one app, then 100 tasks whose next slot is an hour away"
  sleep 10
  scale_header
  scale_rest "one app"
  local requests_0 cpu_0=$SCALE_CPU
  requests_0=$(schedules_requests_per_minute)
  later="$(date -u -d '+1 hour' +%-M) $(date -u -d '+1 hour' +%-H) * * *"
  for ((i = 1; i <= 100; i++)); do
    schedules_task "idle-$i" "$later" "echo idle"
  done | kubectl -n "$SCHEDULES_NS" apply -f - >/dev/null
  sleep 15
  scale_rest "100 idle tasks"
  local added=$(($(schedules_requests_per_minute) - requests_0))
  local cpu_added
  cpu_added=$(awk -v a="$SCALE_CPU" -v b="$cpu_0" 'BEGIN {printf "%.2f", a - b}')

  log "slot → container started: $SCHEDULES_BURST tasks on one slot"
  mapfile -t floor < <(schedules_floor "$SCHEDULES_BURST")
  # Made early in a minute, so none is due before it is seen.
  while (($(date +%-S) > 40)); do sleep 1; done
  for ((i = 1; i <= SCHEDULES_BURST; i++)); do
    schedules_task "burst-$i" "* * * * *" "sleep 20"
  done | kubectl -n "$SCHEDULES_NS" apply -f - >/dev/null
  sleep $((62 - $(date +%-S) + 5))
  mapfile -t latencies < <(schedules_latencies)
  ((${#latencies[@]} >= SCHEDULES_BURST)) ||
    die "only ${#latencies[@]} of $SCHEDULES_BURST runs started a container"
  local p50 p99 floor_p50 floor_p99 ratio
  p50=$(schedules_percentile 50 "${latencies[@]}")
  p99=$(schedules_percentile 99 "${latencies[@]}")
  floor_p50=$(schedules_percentile 50 "${floor[@]}")
  floor_p99=$(schedules_percentile 99 "${floor[@]}")
  ratio=$(awk -v b="$p99" -v f="$floor_p99" 'BEGIN {printf "%.2f", b / f}')
  echo "$SCHEDULES_BURST docker run -d at once → started: p50 $floor_p50 ms, p99 $floor_p99 ms"
  echo "slot → run container started: p50 $p50 ms, p99 $p99 ms over ${#latencies[@]} runs" \
    "(p99 ${ratio}× the floor)"

  log "event → webhook delivered: $SCHEDULES_BURST failed runs"
  local hooks receiver notify=() n_p50 n_p99
  hooks=$(mktemp)
  receiver=$(schedules_receiver "$hooks")
  kubectl -n "$SCHEDULES_NS" create secret generic hook \
    --from-literal=url="http://127.0.0.1:$SCHEDULES_HOOK_PORT/" >/dev/null
  kubectl -n "$SCHEDULES_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: NotificationChannel
metadata: { name: hook }
spec: { name: hook, kind: webhook, secretRef: hook, events: [scheduled-task-failed] }
---
apiVersion: berth.dev/v1alpha1
kind: ScheduledTask
metadata: { name: failing }
spec: { resourceId: web, schedule: "@yearly", command: "exit 1", state: disabled }
YAML
  sleep 2
  for ((i = 1; i <= SCHEDULES_BURST; i++)); do
    cat <<YAML
---
apiVersion: berth.dev/v1alpha1
kind: ScheduledTaskRun
metadata: { name: failing-$i, labels: { berth.dev/scheduled-task: failing } }
spec: { taskId: failing, resourceId: web, triggerKind: manual, command: "exit 1", timeoutSeconds: 60 }
YAML
  done | kubectl -n "$SCHEDULES_NS" apply -f - >/dev/null
  local deadline=$((SECONDS + 120))
  while (($(wc -l <"$hooks") < SCHEDULES_BURST && SECONDS < deadline)); do sleep 1; done
  kill "$receiver" 2>/dev/null || true
  mapfile -t notify < <(schedules_notify_latencies "$hooks")
  ((${#notify[@]} >= SCHEDULES_BURST)) ||
    die "only ${#notify[@]} of $SCHEDULES_BURST failures reached the webhook"
  n_p50=$(schedules_percentile 50 "${notify[@]}")
  n_p99=$(schedules_percentile 99 "${notify[@]}")
  echo "run failed → webhook delivered: p50 $n_p50 ms, p99 $n_p99 ms over ${#notify[@]} runs"
  echo
  scale_goal "API requests/min 100 idle tasks add (<= 0)" "$added" 0 || failed=1
  scale_goal "controller CPU% 100 idle tasks add (<= 0.5)" "$cpu_added" 0.5 || failed=1
  # Issue 43's 2 s is a goal only where Docker itself starts 20 containers within it; on a
  # machine where the floor alone takes longer, the ratio below is what Berth adds and judges.
  if ((floor_p99 <= 2000)); then
    scale_goal "slot → container started, p99 ms over $SCHEDULES_BURST runs on one slot (<= 2000)" \
      "$p99" 2000 || failed=1
  else
    printf '  %-88s %8s  %s\n' "slot → container started, p99 ms (floor p99 $floor_p99 ms > 2000: ratio judges)" \
      "$p99" report
  fi
  scale_goal "the same against $SCHEDULES_BURST docker run -d at once, p99 ratio (<= 1.5)" \
    "$ratio" 1.5 || failed=1
  scale_goal "run failed → webhook delivered, p99 ms over $SCHEDULES_BURST (<= 2000)" \
    "$n_p99" 2000 || failed=1
  return "$failed"
}
