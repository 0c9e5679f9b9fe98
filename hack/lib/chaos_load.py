#!/usr/bin/env python3
"""Load client of hack/chaos.sh: kept-alive HTTP/1.1 connections through Berth's edge proxy.

    chaos_load.py --out FILE [--connections 8] [--interval 0.025] [--max-seconds 3600] \
        TARGET...        TARGET = NAME=ADDRESS:PORT/HOSTHEADER

Every target gets CONNECTIONS persistent connections, each alternating GET / and POST / (as
browsers, API clients and load balancers do) on one connection for as long as it lasts. An
answer of the app counts as answered, whatever its status (the sample app answers 501 to POST);
no response, a connection error or timeout, or the proxy's own 502/503/504 counts as failed, and
the client reconnects (after 0.1 s) and goes on. A connection the server asks to close
(`Connection: close`) is reopened for the next request without counting a failure.

FILE is rewritten atomically every 0.1 s with one JSON object per target:
    {"local": {"answered": N, "failed": M, "errors": {"kind": n}, "versions": {"v1": n},
               "recent_failures": [[unix_time, "kind"], ...]}}
The process ends on SIGTERM/SIGINT or after --max-seconds.
"""

import argparse
import http.client
import json
import os
import re
import signal
import sys
import threading
import time

VERSION = re.compile(rb"sample-app (v\d+)")


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.answered = 0
        self.failed = 0
        self.errors = {}
        self.versions = {}
        self.recent = []

    def ok(self, version):
        with self.lock:
            self.answered += 1
            if version:
                self.versions[version] = self.versions.get(version, 0) + 1

    def fail(self, kind):
        with self.lock:
            self.failed += 1
            self.errors[kind] = self.errors.get(kind, 0) + 1
            self.recent.append([round(time.time(), 3), kind])
            del self.recent[:-50]

    def snapshot(self):
        with self.lock:
            return {
                "answered": self.answered,
                "failed": self.failed,
                "errors": dict(self.errors),
                "versions": dict(self.versions),
                "recent_failures": list(self.recent),
            }


def connection_loop(address, port, host, tally, stop, interval, timeout):
    conn = None
    post = False
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection(address, port, timeout=timeout)
            headers = {"Host": host}
            if post:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                conn.request("POST", "/", body=b"greeting=hello", headers=headers)
            else:
                conn.request("GET", "/", headers=headers)
            response = conn.getresponse()
            body = response.read()
            if response.status in (502, 503, 504):
                tally.fail(f"http {response.status}")
            else:
                match = VERSION.search(body)
                tally.ok(match.group(1).decode() if match else None)
            if response.will_close:
                conn.close()
                conn = None
        except Exception as error:  # every way of getting no answer is one failure
            tally.fail(type(error).__name__)
            if conn is not None:
                conn.close()
            conn = None
            stop.wait(0.1)
        post = not post
        stop.wait(interval)
    if conn is not None:
        conn.close()


def write_atomically(path, tallies):
    data = {name: tally.snapshot() for name, tally in tallies.items()}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as out:
        json.dump(data, out)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.025)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--max-seconds", type=float, default=3600)
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    tallies, threads = {}, []
    for spec in args.targets:
        match = re.fullmatch(r"([\w-]+)=([\d.]+):(\d+)/([\w.-]+)", spec)
        if not match:
            sys.exit(f"chaos_load.py: bad target {spec!r} (NAME=ADDRESS:PORT/HOSTHEADER)")
        name, address, port, host = match.groups()
        tallies[name] = Tally()
        for _ in range(args.connections):
            thread = threading.Thread(
                target=connection_loop,
                args=(address, int(port), host, tallies[name], stop, args.interval, args.timeout),
                daemon=True,
            )
            thread.start()
            threads.append(thread)

    deadline = time.monotonic() + args.max_seconds
    while not stop.is_set() and time.monotonic() < deadline:
        write_atomically(args.out, tallies)
        stop.wait(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=args.timeout + 1)
    write_atomically(args.out, tallies)


if __name__ == "__main__":
    main()
