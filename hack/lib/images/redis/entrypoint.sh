#!/bin/sh
# berth/redis: the official image's start, for what Berth uses (hack/lib/images.sh): data in
# /data, run as `redis`. With REDIS_PASSWORD set, the server requires it (`requirepass`), read
# from its standard input rather than the command line, where `ps` would show it.
set -e

# `docker run berth/redis --appendonly yes` runs the server with those options.
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- redis-server "$@"
fi

if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown redis:redis /data 2>/dev/null || true
  exec su -p -s /bin/sh -c 'exec "$0" "$@"' -- redis "$0" "$@"
fi

if [ "$1" = redis-server ] && [ -n "$REDIS_PASSWORD" ]; then
  shift
  # `redis-server -` reads configuration from its standard input.
  exec redis-server - "$@" <<EOF
requirepass $REDIS_PASSWORD
EOF
fi

exec "$@"
