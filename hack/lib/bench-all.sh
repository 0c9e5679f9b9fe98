# hack/bench.sh all: every benchmark in one go, one after the other, and one table at the end.
# Sourced by hack/bench.sh.

# The order matters: in-cluster goes last (it stops Berth's processes and ends with the node
# down), console-ui and build after the ones that start Berth themselves.
BENCH_ALL=(ssh shim deploy observe cli monitor tls databases schedules backups scale build previews console-api console-ui rollup in-cluster)

# bench_all_figures OUT: the lines of a bench's output that state a figure against its goal
# ("goal", PASS/FAIL, or a "(<= X)" column as the databases bench prints), each once: some
# benches print their verdicts as they go and again in a summary.
bench_all_figures() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -iE '(^(PASS|FAIL)\b)|goal|\(<= [0-9.]+\)' | grep -v '^\[' |
    cut -c1-150 | awk '!seen[$0]++' | grep . || echo "no figure stated against a goal"
}

bench_all() {
  local dir=$BERTH_REPO_ROOT/.berth/bench-all name status failed=() started=$SECONDS
  mkdir -p "$dir"
  : >"$dir/table"
  for name in "${BENCH_ALL[@]}"; do
    log "== bench $name (output: $dir/$name.out)"
    local began=$SECONDS
    status=0
    "$HACK_DIR/bench.sh" "$name" >"$dir/$name.out" 2>&1 || status=$?
    local verdict=PASS
    if ((status != 0)); then
      verdict="FAIL (exit $status)"
      failed+=("$name")
    fi
    {
      printf '%-12s %-16s %5ss\n' "$name" "$verdict" "$((SECONDS - began))"
      bench_all_figures "$dir/$name.out" | sed 's/^/    /'
    } >>"$dir/table"
    tail -n 3 "$dir/$name.out" | sed 's/^/    /' >&2
  done
  echo
  echo "Every benchmark, one run each ($(nproc) cores, $((SECONDS - started)) s in all):"
  printf '%-12s %-16s %6s\n' bench verdict time
  echo "    figure against its goal"
  cat "$dir/table"
  if ((${#failed[@]} > 0)); then
    echo "FAIL: ${failed[*]} missed a goal or did not finish (outputs in $dir)"
    return 1
  fi
  echo "PASS: every benchmark met its goals"
}
