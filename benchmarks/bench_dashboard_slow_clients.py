"""The dashboard while slow clients try to tie it up (issue 52, item 4): the sign-in page's answer time.

Serves the dashboard as `dialeval dashboard` does (parlai_dialeval/dashboard/server.py, default settings: 20 s
idle timeout, 10 s for a whole request, 20 connections per source, 200 in all) over the tests' stand-in study,
and opens ATTACKERS connections that each send half a request and then one more header line every TRICKLE
seconds (never idle), from one loopback address or from one address each. Meanwhile a researcher (127.0.0.1)
loads /login every few seconds for DURATION seconds. Prints the researcher's answer times (max, median),
the attackers' connections refused at once (429) or closed by the server, and how long the last one stayed.
Before issue 52, 105 such connections trickling every 12 s kept /login from answering (curl gave up after 8 s,
three times in 64 s).

    .venv/bin/python benchmarks/bench_dashboard_slow_clients.py [--attackers 105] [--trickle 12] [--duration 64]
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import threading
import time

import httpx

from load_generator import test_helper  # benchmarks/, beside this script

STAND_IN = test_helper("test_dashboard")  # the tests' stand-in study (SECRET, StandIn)


def attack(port: int, attackers: int, sources: int, trickle: float, stop: threading.Event, seen: dict) -> None:
    """Half-sent requests, one more header line every ``trickle`` seconds, until ``stop``; how each ended."""
    socks = []
    for k in range(attackers):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(f"127.0.3.{k % sources + 2}", 0))
        sock.sendall(b"GET /login HTTP/1.1\r\nHost: x\r\n")
        sock.setblocking(False)
        socks.append((sock, time.monotonic()))
    ended: dict[int, tuple[str, float]] = {}
    while not stop.wait(min(trickle, 1.0)):
        for k, (sock, opened) in enumerate(socks):
            if k in ended:
                continue
            try:
                answer = sock.recv(100)
                ended[k] = ("refused 429" if answer.startswith(b"HTTP/1.1 429") else "closed", time.monotonic() - opened)
                continue
            except BlockingIOError:
                pass
            except OSError:
                ended[k] = ("closed", time.monotonic() - opened)
                continue
            if (time.monotonic() - opened) % trickle < 1.0:
                try:
                    sock.send(b"X-More: 1\r\n")
                except OSError:
                    ended[k] = ("closed", time.monotonic() - opened)
    seen["ended"] = ended
    seen["still open"] = attackers - len(ended)
    for sock, _ in socks:
        sock.close()


def measure(attackers: int, sources: int, trickle: float, duration: float) -> None:
    from parlai_dialeval.dashboard import server

    os.environ[server.PASSWORD_ENV] = STAND_IN.SECRET
    dashboard = server.start(STAND_IN.StandIn(), port=0)
    stop, seen, waits = threading.Event(), {}, []
    attacker = threading.Thread(target=attack, args=(dashboard.port, attackers, sources, trickle, stop, seen))
    try:
        attacker.start()
        time.sleep(1)
        end = time.monotonic() + duration
        with httpx.Client(base_url=dashboard.url, timeout=8) as web:
            while time.monotonic() < end:
                started = time.monotonic()
                try:
                    web.get("/login")
                    waits.append(time.monotonic() - started)
                except httpx.TimeoutException:
                    waits.append(float("inf"))
                time.sleep(4)
    finally:
        stop.set()
        attacker.join()
        dashboard.stop()
    kinds = [kind for kind, _ in seen["ended"].values()]
    longest = max((seconds for _, seconds in seen["ended"].values()), default=float("nan"))
    print(f"{attackers} connections trickling a line every {trickle:g} s from {sources} address(es): /login answered "
          f"{sum(w != float('inf') for w in waits)} of {len(waits)} times within 8 s, max {max(waits):.2f} s, median "
          f"{statistics.median(waits):.3f} s; attackers refused at once {kinds.count('refused 429')}, closed by the "
          f"server {kinds.count('closed')} (the last after {longest:.1f} s), still open {seen['still open']}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attackers", type=int, default=105)
    parser.add_argument("--trickle", type=float, default=12.0, help="seconds between an attacker's header lines")
    parser.add_argument("--duration", type=float, default=64.0, help="seconds the researcher keeps loading /login")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    for sources in (1, args.attackers):
        measure(args.attackers, sources, args.trickle, args.duration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
