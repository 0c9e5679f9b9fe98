#!/bin/sh
# Runs busybox httpd in the foreground. As PID 1 httpd would ignore SIGTERM (the kernel drops
# signals PID 1 has no handler for), so `docker stop` would wait its full timeout; this shell
# forwards TERM/INT. Like any well-behaved server it then stops taking connections at once and
# gives the requests it already accepted (httpd's forked children) a moment to finish.
httpd -f -p "${PORT:-8080}" -h /www &
pid=$!
trap 'kill "$pid" 2>/dev/null; sleep 1; exit 0' TERM INT
wait "$pid"
