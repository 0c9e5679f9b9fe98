#!/bin/sh
# Runs busybox httpd in the foreground. As PID 1 httpd would ignore SIGTERM (the kernel drops
# signals PID 1 has no handler for), so `docker stop` would wait its full timeout; this shell
# forwards TERM/INT. Like any well-behaved server it then stops taking connections and gives
# the requests it already accepted (httpd's forked children) a moment to finish. DRAIN_SECONDS
# (default 0) keeps the listener open that long after TERM first, as apps with a drain delay do.
httpd -f -p "${PORT:-8080}" -h /www &
pid=$!
trap 'sleep "${DRAIN_SECONDS:-0}"; kill "$pid" 2>/dev/null; sleep 1; exit 0' TERM INT
wait "$pid"
