# shellcheck shell=bash
# hack/bench.sh backups [MIB]: backups of a managed PostgreSQL on the release berth-controller
# (issue 42). A database of about MIB MiB (default 256; the issue's figure is 1024) on the
# server `local`, a BackupTarget directory on the same server (reached over SSH like any):
#   1. Backup: a DependencyResourceBackup from its creation until its artifact is stored
#      (`step` turns `verifying`), against the floor `ssh … pg_dump -Fc | gzip | ssh … cat >`
#      through the same sshd to the same directory (no sealing, no proof).
#   2. Restore: Berth's test restore of that artifact (throwaway container started and ready,
#      download, open, pg_restore, count: `verification.seconds`), against the floor: the same
#      steps by hand (docker run, pg_isready, the floor's dump through ssh into pg_restore).
#   3. Backup to a bucket: the same database to an `s3` BackupTarget in the stack's Garage,
#      against the floor `ssh … pg_dump -Fc | gzip | rclone rcat` (Debian's rclone, a streamed
#      multipart upload) to the same bucket.
#   4. What idle backup policies cost: berth-controller's API requests/min on backup kinds at
#      rest with the database, a volume and the target only, then with 50 database and 50
#      volume policies whose next slot is an hour away (every request it sends is printed, by
#      kind).
# Exits non-zero when a goal is missed. Source after common.sh, berth.sh and bench-scale.sh.

BACKUPS_NS=bench-backups
BACKUPS_PORT=18970
BACKUPS_DIR=/tmp/berth-bench-backups

backups_ssh() {
  ssh -q -i "$BERTH_SSH_KEY" -p "$BERTH_SSH_PORT" -o BatchMode=yes \
    -o UserKnownHostsFile="$BERTH_SSH_KNOWN_HOSTS" root@127.0.0.1 "$@"
}

# backups_fill CONTAINER MIB: a table of about MIB MiB (md5 text: compresses like real rows).
backups_fill() {
  local rows=$(($2 * 1024 * 1024 / 300))
  docker exec "$1" psql -qAt -U berth -d app -c "create table payload (id bigint primary key,
    body text); insert into payload select g, md5(g::text) || md5((g + 1)::text) ||
    md5((g + 2)::text) || md5((g + 3)::text) || md5((g + 4)::text) || md5((g + 5)::text) ||
    md5((g + 6)::text) || md5((g + 7)::text) from generate_series(1, $rows) g" >/dev/null
  docker exec "$1" psql -qAt -U berth -d app -c \
    "select pg_size_pretty(pg_database_size('app')), count(*) from payload"
}

# backups_floor_dump CONTAINER: seconds of pg_dump -Fc | gzip through sshd to the directory.
backups_floor_dump() {
  local start=$EPOCHREALTIME
  backups_ssh "docker exec $1 pg_dump -Fc -U berth -d app" | gzip -1 |
    backups_ssh "mkdir -p $BACKUPS_DIR && cat > $BACKUPS_DIR/floor.dump.gz"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'
}

# backups_floor_restore IMAGE: seconds to start a throwaway database, restore the floor's dump
# into it through sshd and count its rows.
backups_floor_restore() {
  local image=$1 name=berth-bench-restore-floor start
  start=$EPOCHREALTIME
  docker run -d --name "$name" --network none -e POSTGRES_PASSWORD=bench-only \
    -e POSTGRES_USER=berth -e POSTGRES_DB=app "$image" >/dev/null
  until docker exec "$name" pg_isready -q -h 127.0.0.1 -U berth -d app 2>/dev/null; do
    sleep 0.5
  done
  backups_ssh "cat $BACKUPS_DIR/floor.dump.gz" | gunzip |
    backups_ssh "docker exec -i $name pg_restore -U berth -d app --no-owner --exit-on-error"
  docker exec "$name" psql -qAt -U berth -d app -c "select count(*) from payload" >/dev/null
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'
  docker rm -f "$name" >/dev/null
}

# backups_rclone ARGS…: rclone with the remote `bench:` set to the stack's Garage (plain
# HTTP; rclone 1.60 cannot load AWS_CA_BUNDLE into its transport, so it is left out).
backups_rclone() {
  env -u AWS_CA_BUNDLE RCLONE_CONFIG_BENCH_TYPE=s3 RCLONE_CONFIG_BENCH_PROVIDER=Other \
    RCLONE_CONFIG_BENCH_ENDPOINT="$BERTH_S3_ENDPOINT" RCLONE_CONFIG_BENCH_REGION="$BERTH_S3_REGION" \
    RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="$BERTH_S3_ACCESS_KEY_ID" \
    RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="$BERTH_S3_SECRET_ACCESS_KEY" \
    RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE=true rclone "$@"
}

# backups_floor_bucket CONTAINER: seconds of pg_dump -Fc | gzip through sshd into the bucket
# (rclone rcat: a multipart upload from standard input, as Berth's is).
backups_floor_bucket() {
  local start=$EPOCHREALTIME
  backups_ssh "docker exec $1 pg_dump -Fc -U berth -d app" | gzip -1 |
    backups_rclone rcat "bench:$BERTH_S3_BUCKET/$BACKUPS_NS-floor/floor.dump.gz" ||
    die "the floor's upload to the bucket failed"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'
}

# backups_berth_dump NAME TARGET: seconds from backup NAME's creation until its artifact is
# stored at TARGET.
backups_berth_dump() {
  local name=$1 target=$2 start=$EPOCHREALTIME step
  kubectl -n "$BACKUPS_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: DependencyResourceBackup
metadata: { name: $name }
spec: { dependencyResourceId: db, targetId: $target }
YAML
  while true; do
    step=$(kubectl -n "$BACKUPS_NS" get dependencyresourcebackup "$name" \
      -o jsonpath='{.status.step}/{.status.status}')
    [[ $step == verifying/* || $step == */ready || $step == */failed ]] && break
    sleep 0.25
  done
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'
}

# backups_requests_per_minute: berth-controller's requests on backup kinds (policies, backups,
# restores, targets) in the last scale_rest window, per minute. Requests of other kinds (a
# retention policy's bookkeeping, say) come and go on their own timers and would make the
# policies' figure noise; scale_rest prints them all.
backups_requests_per_minute() {
  awk -v RS=', ' -v window="$SCALE_WINDOW" '
    /:dependencyresource(backup|restore)|:backuptargets|:storagevolume/ { sub(/.*\+/, ""); n += $0 }
    END { printf "%d\n", n * 60 / window }' <<<"$SCALE_SOURCES"
}

# backups_idle_policies: sets BACKUPS_IDLE_ADDED, the API requests/min on backup kinds that 50
# database and 50 volume policies whose next slot is an hour away add at rest; deletes them
# after.
backups_idle_policies() {
  local later i
  log "at rest: the database, a volume and the target, then 50 database and 50 volume backup \
policies an hour from their slot"
  kubectl -n "$BACKUPS_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: StorageVolume
metadata: { name: files }
spec: { projectId: bench, environmentId: bench, name: files, kind: named-volume }
YAML
  sleep 10
  scale_header
  scale_rest "database and target"
  local requests_0
  requests_0=$(backups_requests_per_minute)
  later="$(date -u -d '+1 hour' +%-M) $(date -u -d '+1 hour' +%-H) * * *"
  for ((i = 1; i <= 50; i++)); do
    cat <<YAML
---
apiVersion: berth.dev/v1alpha1
kind: DependencyResourceBackupPolicy
metadata: { name: idle-$i }
spec: { dependencyResourceId: db, targetId: here, schedule: "$later" }
---
apiVersion: berth.dev/v1alpha1
kind: StorageVolumeBackupPolicy
metadata: { name: idle-files-$i }
spec: { storageVolumeId: files, serverId: local, targetId: here, schedule: "$later" }
YAML
  done | kubectl -n "$BACKUPS_NS" apply -f - >/dev/null
  sleep 15
  scale_rest "50 + 50 idle policies"
  BACKUPS_IDLE_ADDED=$(($(backups_requests_per_minute) - requests_0))
  kubectl -n "$BACKUPS_NS" delete dependencyresourcebackuppolicies,storagevolumebackuppolicies \
    --all >/dev/null
  kubectl -n "$BACKUPS_NS" delete storagevolume files --wait=false >/dev/null
}

backups_cleanup() {
  log "cleaning up namespace $BACKUPS_NS"
  docker rm -f berth-bench-restore-floor >/dev/null 2>&1 || true
  kubectl -n "$BACKUPS_NS" delete dependencyresources.berth.dev --all --timeout=300s \
    >/dev/null 2>&1 || true
  kubectl -n "$BACKUPS_NS" delete server.berth.dev local --timeout=60s >/dev/null 2>&1 || true
  kubectl delete namespace "$BACKUPS_NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$BACKUPS_DIR"
  backups_rclone deletefile "bench:$BERTH_S3_BUCKET/$BACKUPS_NS-floor/floor.dump.gz" 2>/dev/null || true
  BERTH_BIN_DIR=$CARGO_TARGET_DIR/debug berth_start_controller "$BERTH_RUN_DIR/controller.log" 9>&-
}

bench_backups() {
  local mib=${1:-256} failed=0 image=127.0.0.1:5000/berth/postgres:15 container
  stack_env
  ensure_packages rclone:rclone
  # shellcheck source-path=SCRIPTDIR
  source "$HACK_DIR/lib/berth.sh"
  scale_take_over "$BACKUPS_NS"
  trap backups_cleanup EXIT
  bench_local_server "$BACKUPS_NS" "$BACKUPS_PORT"
  docker tag berth/postgres:15 "$image"
  kubectl -n "$BACKUPS_NS" apply -f - >/dev/null <<YAML
apiVersion: berth.dev/v1alpha1
kind: DependencyResource
metadata: { name: db, annotations: { berth.dev/delete-data: db } }
spec: { kind: postgres, projectId: bench, environmentId: bench, serverId: local, name: db, image: "$image" }
---
apiVersion: berth.dev/v1alpha1
kind: BackupTarget
metadata: { name: here }
spec: { name: here, kind: server-directory, serverDirectory: { serverId: local, path: $BACKUPS_DIR } }
---
apiVersion: v1
kind: Secret
metadata: { name: bucket-keys }
stringData: { accessKeyId: "$BERTH_S3_ACCESS_KEY_ID", secretAccessKey: "$BERTH_S3_SECRET_ACCESS_KEY" }
---
apiVersion: berth.dev/v1alpha1
kind: BackupTarget
metadata: { name: bucket }
spec:
  name: bucket
  kind: s3
  s3: { endpoint: "$BERTH_S3_ENDPOINT", bucket: "$BERTH_S3_BUCKET", region: "$BERTH_S3_REGION",
        pathStyle: true, prefix: "$BACKUPS_NS", credentialsSecretRef: { name: bucket-keys } }
YAML
  kubectl -n "$BACKUPS_NS" wait --for=condition=Ready dependencyresource/db --timeout=180s \
    >/dev/null || die "the database did not become Ready"
  container=berth-dep-$BACKUPS_NS-db
  backups_idle_policies

  log "filling the database with about $mib MiB"
  echo "database: $(backups_fill "$container" "$mib")"

  log "backup: Berth (dump, seal, store) against pg_dump -Fc | gzip through sshd"
  local floor_dump berth_dump floor_restore berth_restore status
  floor_dump=$(backups_floor_dump "$container")
  berth_dump=$(backups_berth_dump bench-1 here)
  status=$(kubectl -n "$BACKUPS_NS" wait --for=jsonpath='{.status.status}'=ready \
    dependencyresourcebackup/bench-1 --timeout=1800s -o jsonpath='{.status.verification}') ||
    die "the backup did not become ready: $(kubectl -n "$BACKUPS_NS" get dependencyresourcebackup bench-1 -o jsonpath='{.status.failureMessage}')"
  echo "Berth's test restore: $status"
  berth_restore=$(jq -r .seconds <<<"$status")
  log "restore: the same steps by hand (docker run, pg_isready, pg_restore through sshd, count)"
  floor_restore=$(backups_floor_restore "$image")
  echo "artifact: $(kubectl -n "$BACKUPS_NS" get dependencyresourcebackup bench-1 -o jsonpath='{.status.artifact.bytes}') bytes sealed; floor: $(stat -c %s "$BACKUPS_DIR/floor.dump.gz") bytes gzipped"
  echo "backup: Berth ${berth_dump} s, floor ${floor_dump} s; restore: Berth ${berth_restore} s, floor ${floor_restore} s"
  log "backup to a bucket: Berth (dump, seal, multipart upload) against pg_dump -Fc | gzip | rclone rcat"
  local floor_bucket berth_bucket
  floor_bucket=$(backups_floor_bucket "$container")
  berth_bucket=$(backups_berth_dump bench-s3 bucket)
  kubectl -n "$BACKUPS_NS" wait --for=jsonpath='{.status.status}'=ready \
    dependencyresourcebackup/bench-s3 --timeout=1800s >/dev/null ||
    die "the bucket backup did not become ready: $(kubectl -n "$BACKUPS_NS" get dependencyresourcebackup bench-s3 -o jsonpath='{.status.failureMessage}')"
  echo "backup to the bucket: Berth ${berth_bucket} s, floor ${floor_bucket} s"
  echo
  scale_goal "backup of ${mib} MiB, Berth / pg_dump -Fc | gzip (<= 1.3)" \
    "$(awk -v b="$berth_dump" -v f="$floor_dump" 'BEGIN {printf "%.2f", b / f}')" 1.3 || failed=1
  scale_goal "restore of it, Berth's test restore / by hand (<= 1.3)" \
    "$(awk -v b="$berth_restore" -v f="$floor_restore" 'BEGIN {printf "%.2f", b / f}')" 1.3 || failed=1
  scale_goal "backup of it to a bucket, Berth / pg_dump -Fc | gzip | rclone rcat (<= 1.3)" \
    "$(awk -v b="$berth_bucket" -v f="$floor_bucket" 'BEGIN {printf "%.2f", b / f}')" 1.3 || failed=1
  scale_goal "API requests/min on backup kinds 50 + 50 idle policies add (<= 0)" "$BACKUPS_IDLE_ADDED" 0 ||
    failed=1
  return "$failed"
}
