# shellcheck shell=bash
# Shared helpers for the scripts in hack/. Source it; it defines functions and two variables and
# runs nothing else.
#
#   BERTH_CACHE      build cache and state root  (${XDG_CACHE_HOME:-$HOME/.cache}/berth)
#   BERTH_STACK_DIR  local stack runtime state   ($BERTH_CACHE/stack)
#   BERTH_LOG_PREFIX tag printed by log/die      (default: the calling script's name)
#
#   log MSG...                       print "[prefix] MSG" on stderr
#   warn MSG... / die MSG...         same, die exits 1
#   wait_for SECONDS DESC CMD...     run CMD every 0.25 s until it succeeds; die after SECONDS
#   start_bg NAME LOGFILE CMD...     start CMD detached (own session, survives this shell),
#                                    pid in $BERTH_STACK_DIR/NAME.pid; no-op if already running
#   stop_bg NAME [SECONDS]           TERM (then KILL after SECONDS, default 15) the process
#                                    started under NAME; no-op if not running
#   is_running NAME                  true when NAME's pid file names a live process of ours
#   ensure_packages CMD:PKG...       apt-get install the packages whose command is missing
#   prune_build_cache TARGET_DIR     drop stale Berth artifacts from a shared cargo target dir

BERTH_CACHE=${BERTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}
BERTH_STACK_DIR=${BERTH_STACK_DIR:-$BERTH_CACHE/stack}
export BERTH_CACHE BERTH_STACK_DIR

log() { echo "[${BERTH_LOG_PREFIX:-$(basename "$0" .sh)}] $*" >&2; }
warn() { log "warning: $*"; }
die() {
  log "error: $*"
  exit 1
}

# wait_for SECONDS DESC CMD... — poll CMD (output discarded) until it succeeds.
wait_for() {
  local timeout=$1 desc=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      die "timed out after ${timeout}s waiting for $desc"
    fi
    sleep 0.25
  done
}

_pidfile() { echo "$BERTH_STACK_DIR/$1.pid"; }

# _alive PID — the process exists and has not exited. Detached processes are reparented to
# PID 1, which may be slow to reap them, so an exited one can linger as a zombie ("Z").
_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}

# is_running NAME — the pid file holds "PID EXE"; checking the executable as well as the pid
# keeps a stale pid file (say, after a reboot) from matching an unrelated process.
is_running() {
  local f pid exe
  f=$(_pidfile "$1")
  [[ -r "$f" ]] || return 1
  read -r pid exe <"$f" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && _alive "$pid" || return 1
  local actual
  actual=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  # A binary replaced on disk (package upgrade, rebuild) shows as "PATH (deleted)".
  [[ -z "$exe" || "${actual% (deleted)}" == "$exe" ]]
}

# start_bg NAME LOGFILE CMD... — setsid detaches CMD from this shell's session and terminal,
# so it outlives the caller. The child writes its own pid before exec'ing CMD, which keeps the
# pid right whether or not setsid had to fork.
start_bg() {
  local name=$1 logfile=$2
  shift 2
  if is_running "$name"; then
    return 0
  fi
  local exe
  exe=$(command -v "$1") || die "$name: command not found: $1"
  exe=$(readlink -f "$exe")
  mkdir -p "$BERTH_STACK_DIR" "$(dirname "$logfile")"
  local f
  f=$(_pidfile "$name")
  rm -f "$f"
  # shellcheck disable=SC2016 # expanded by the inner bash
  setsid bash -c 'echo "$$ $1" >"$2"; shift 2; exec "$@"' _ "$exe" "$f" "$@" \
    </dev/null >>"$logfile" 2>&1 &
  # Wait until the pid file is there, so that is_running is meaningful right after return.
  local _
  for _ in $(seq 1 40); do
    [[ -s "$f" ]] && break
    sleep 0.05
  done
  [[ -s "$f" ]] || die "$name: failed to start (see $logfile)"
}

# stop_bg NAME [SECONDS] — stop only what start_bg started under NAME.
stop_bg() {
  local name=$1 timeout=${2:-15} f pid
  f=$(_pidfile "$name")
  if ! is_running "$name"; then
    rm -f "$f"
    return 0
  fi
  read -r pid _ <"$f"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + timeout))
  while _alive "$pid"; do
    if ((SECONDS >= deadline)); then
      warn "$name (pid $pid) did not stop after ${timeout}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  rm -f "$f"
}

# ensure_packages CMD:PKG... — install (Debian) the packages whose command is missing. The
# package lists are refreshed only when an install fails, since a fresh machine may have none.
ensure_packages() {
  local spec missing=()
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; then
    log "refreshing the package lists"
    apt-get update -q >/dev/null
    apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

# prune_build_cache TARGET_DIR: removes what cargo never reuses from a shared target dir, Berth's
# own crate artifacts and incremental caches untouched for a day (other clones' builds);
# dependencies stay cached. When the disk runs low (under BERTH_MIN_FREE_GB, default 40) it
# keeps only the last hour's: several clones a day can fill it before any is a day old, and a
# full disk makes the kubelet evict pods and delete the stack's images.
prune_build_cache() {
  local debug=$1/debug age=(-mtime +0)
  [[ -d "$debug" ]] || return 0
  if (($(_free_gb "$1") < ${BERTH_MIN_FREE_GB:-40})); then
    age=(-mmin +60)
    log "under ${BERTH_MIN_FREE_GB:-40} GB free: dropping Berth's build artifacts older than an hour"
  fi
  find "$debug/incremental" -mindepth 1 -maxdepth 1 "${age[@]}" -exec rm -rf {} + 2>/dev/null || true
  find "$debug/deps" -maxdepth 1 \( -name '*berth*' -o -name 'integration-*' \) "${age[@]}" \
    -delete 2>/dev/null || true
}

_free_gb() { df --output=avail -BG "$1" | tail -1 | tr -dc 0-9; }
