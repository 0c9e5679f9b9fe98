# Berth's monitoring probe (controller/src/observer_tasks/usage/probe.rs runs it; hack/bench.sh
# monitor measures it). POSIX sh reading only /proc and cgroup files. Arguments: the
# filesystem to measure (Docker's data root), then container ids. Its cost must not grow
# with forks per container: the shell finds each container's files with builtins only, and
# one awk reads them all.
root=$1; shift
read -r uptime rest < /proc/uptime
read -r load1 load5 load15 rest < /proc/loadavg
echo "uptime $uptime"
echo "cores $(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)"
echo "loadavg $load1 $load5 $load15"
echo "df $(df -P -k "$root" 2>/dev/null | awk 'NR==2{printf "%.0f %.0f", $2*1024, $3*1024}')"
echo "dfi $(df -P -i "$root" 2>/dev/null | awk 'NR==2{printf "%.0f %.0f", $2, $3}')"
for id in "$@"; do
  kind=- cpu=- memory=- stat=- net=- procs=
  for d in /sys/fs/cgroup/system.slice/docker-$id.scope /sys/fs/cgroup/docker/$id; do
    if [ -r "$d/cpu.stat" ]; then
      kind=v2 cpu=$d/cpu.stat memory=$d/memory.current stat=$d/memory.stat procs=$d/cgroup.procs
      break
    fi
  done
  if [ "$kind" = - ]; then
    for d in /sys/fs/cgroup/cpuacct/docker/$id /sys/fs/cgroup/cpu,cpuacct/docker/$id \
      /sys/fs/cgroup/cpuacct/system.slice/docker-$id.scope; do
      if [ -r "$d/cpuacct.usage" ]; then kind=v1 cpu=$d/cpuacct.usage procs=$d/cgroup.procs; break; fi
    done
    for d in /sys/fs/cgroup/memory/docker/$id /sys/fs/cgroup/memory/system.slice/docker-$id.scope; do
      if [ -r "$d/memory.usage_in_bytes" ]; then
        kind=v1 memory=$d/memory.usage_in_bytes stat=$d/memory.stat
        break
      fi
    done
  fi
  pid=
  [ -n "$procs" ] && read -r pid < "$procs" 2>/dev/null
  [ -n "$pid" ] && net=/proc/$pid/net/dev
  echo "want $id $kind $cpu $memory $stat $net"
done | awk '
function value(file, key,   line, f) {
  if (file == "-") return ""
  while ((getline line < file) > 0) {
    split(line, f, " ")
    if (key == "" || f[1] == key) { close(file); return key == "" ? f[1] : f[2] }
  }
  close(file); return ""
}
function traffic(file,   line, f, n, rx, tx) {
  if (file == "-") return "- -"
  while ((getline line < file) > 0) {
    if (++n <= 2) continue
    gsub(":", " ", line); split(line, f, " ")
    if (f[1] != "lo") { rx += f[2]; tx += f[10] }
  }
  close(file)
  return n ? sprintf("%.0f %.0f", rx, tx) : "- -"
}
BEGIN {
  while ((getline line < "/proc/meminfo") > 0) {
    split(line, f, " ")
    if (f[1] == "MemTotal:") total = f[2]
    if (f[1] == "MemAvailable:") available = f[2]
  }
  printf "meminfo %.0f %.0f\n", total * 1024, available * 1024
  getline line < "/proc/stat"; split(line, f, " ")
  printf "stat %.0f %.0f\n", f[2]+f[3]+f[4]+f[5]+f[6]+f[7]+f[8]+f[9], f[5]+f[6]
}
$1 == "want" {
  used = value($4, $3 == "v2" ? "usage_usec" : "")
  cpu = used == "" ? "-" : sprintf("%.0f", $3 == "v2" ? used * 1000 : used)
  current = value($5, "")
  inactive = value($6, $3 == "v2" ? "inactive_file" : "total_inactive_file")
  memory = current == "" ? "-" : sprintf("%.0f", current - inactive)
  print "container", $2, cpu, memory, traffic($7)
}'
