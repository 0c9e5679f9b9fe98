# shellcheck shell=bash
# `hack/bench.sh monitor`: what Berth's agentless monitoring probe costs the server and how
# close its figures are to Docker's own. Sourced by hack/bench.sh (stack_env, log, die).
#
# 1. Cost: the probe (controller/src/observer_tasks/usage/probe.sh, the very file the controller
#    runs) over SSH for N running containers against an idle tick (no container) in the same
#    run: CPU seconds per tick of the probe and its children, and that as a share of one core
#    at the default 30 s cadence (goal below 1 %). sshd's own cost per exec is not included.
# 2. Accuracy: a container burning one core and holding 64 MiB: the probe's CPU share and
#    memory against `docker stats` for the same container (goals: within 10 points, 5 %).

BENCH_MONITOR_LABEL=berth.dev/bench=monitor
BENCH_MONITOR_PROBE=controller/src/observer_tasks/usage/probe.sh

bench_monitor_ssh() {
  ssh -q -i "$BERTH_SSH_KEY" -p "$BERTH_SSH_PORT" -o BatchMode=yes \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 "$@"
}

bench_monitor_cleanup() {
  local ids
  ids=$(docker ps -aq --filter "label=$BENCH_MONITOR_LABEL")
  [[ -z "$ids" ]] || docker rm -f $ids >/dev/null
}

# bench_monitor_tick_cpu RUNS IDS...: CPU seconds (user + system) per probe run.
bench_monitor_tick_cpu() {
  local runs=$1
  shift
  bench_monitor_ssh "bash -c 'for i in \$(seq $runs); do sh /tmp/berth-probe.sh / $* >/dev/null; done; times'" |
    awk -v runs="$runs" 'NR==2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%.4f", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) / runs }'
}

# bench_monitor_read ID: "UPTIME CORES CPU_NS MEM_BYTES" from one probe run.
bench_monitor_read() {
  bench_monitor_ssh "sh /tmp/berth-probe.sh / $1" | awk '
    $1 == "uptime" { up = $2 } $1 == "cores" { cores = $2 }
    $1 == "container" { cpu = $3; mem = $4 }
    END { print up, cores, cpu, mem }'
}

# Bytes of a `docker stats` size such as 64.5MiB.
bench_monitor_bytes() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; unit = v; sub(/^[0-9.]+/, "", unit)
    f["B"] = 1; f["KiB"] = 1024; f["MiB"] = 1048576; f["GiB"] = 1073741824
    f["kB"] = 1000; f["MB"] = 1e6; f["GB"] = 1e9
    printf "%.0f", n * f[unit] }'
}

bench_monitor() {
  local containers=${1:-100} runs=${2:-20}
  stack_env
  trap bench_monitor_cleanup EXIT
  bench_monitor_cleanup
  bench_monitor_ssh "cat > /tmp/berth-probe.sh" <"$HACK_DIR/../$BENCH_MONITOR_PROBE"

  log "starting $containers idle containers (berth/busybox:1)"
  local i ids=()
  for ((i = 0; i < containers; i++)); do
    ids+=("$(docker run -d --label "$BENCH_MONITOR_LABEL" berth/busybox:1 sleep 3600)")
  done
  log "probe cost: $runs ticks each, $containers containers against none, alternating"
  local idle=0 busy=0 round
  for round in 1 2 3; do
    idle=$(awk -v a="$idle" -v b="$(bench_monitor_tick_cpu "$runs")" 'BEGIN{print a + b / 3}')
    busy=$(awk -v a="$busy" -v b="$(bench_monitor_tick_cpu "$runs" "${ids[*]}")" 'BEGIN{print a + b / 3}')
  done
  bench_monitor_cleanup

  log "accuracy: one container burning a core and holding 64 MiB, against docker stats"
  local burner
  burner=$(docker run -d --label "$BENCH_MONITOR_LABEL" --shm-size=128m berth/busybox:1 \
    sh -c 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 2>/dev/null; while :; do :; done')
  sleep 3
  local first second stats
  first=$(bench_monitor_read "$burner")
  stats=$(docker stats --no-stream --format '{{.CPUPerc}} {{.MemUsage}}' "$burner")
  sleep 5
  second=$(bench_monitor_read "$burner")
  bench_monitor_cleanup
  trap - EXIT

  local docker_cpu docker_mem
  docker_cpu=${stats%%%*}
  docker_mem=$(bench_monitor_bytes "$(awk '{print $2}' <<<"$stats")")
  awk -v idle="$idle" -v busy="$busy" -v n="$containers" -v a="$first" -v b="$second" \
    -v dcpu="$docker_cpu" -v dmem="$docker_mem" 'BEGIN {
    share = busy / 30 * 100
    printf "probe CPU per tick: idle %.4f s, %d containers %.4f s (%.1fx idle)\n", idle, n, busy, busy / idle
    printf "at the default 30 s cadence: %.3f %% of one core\n", share
    split(a, x, " "); split(b, y, " ")
    cores = y[2]; ours = (y[3] - x[3]) / 1e9 / (y[1] - x[1]) / cores * 100
    theirs = dcpu / cores
    printf "containerCpuPercent %.1f, docker stats %.1f (%.1f%% of one core over %d cores)\n", ours, theirs, dcpu, cores
    mem_error = (y[4] - dmem) / dmem * 100; if (mem_error < 0) mem_error = -mem_error
    printf "memory %.1f MiB, docker stats %.1f MiB (%.1f %% apart)\n", y[4] / 1048576, dmem / 1048576, mem_error
    diff = ours - theirs; if (diff < 0) diff = -diff
    failed = 0
    if (share < 1) print "PASS: probe cost below 1 % of one core"; else { print "FAIL: probe cost above 1 % of one core"; failed = 1 }
    if (diff <= 10) print "PASS: CPU within 10 points of docker stats"; else { print "FAIL: CPU more than 10 points from docker stats"; failed = 1 }
    if (mem_error <= 5) print "PASS: memory within 5 % of docker stats"; else { print "FAIL: memory more than 5 % from docker stats"; failed = 1 }
    exit failed }'
}
