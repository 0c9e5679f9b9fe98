#!/bin/sh
# Runs busybox httpd in the foreground. As PID 1 httpd would ignore SIGTERM (the kernel drops
# signals PID 1 has no handler for), so `docker stop` would wait its full timeout; this shell
# forwards TERM/INT and exits at once.
httpd -f -p "${PORT:-8080}" -h /www &
pid=$!
trap 'kill "$pid" 2>/dev/null; exit 0' TERM INT
wait "$pid"
