"""The TLS context every HTTP client of this package shares (httpx otherwise loads the certificate bundle anew for
each client it makes)."""
from __future__ import annotations

import functools


@functools.cache
def shared_tls_context():
    """One context a process: a new one costs 38 ms of CPU, which was half a Prolific server's time under a flood of
    made-up arrivals (a client for each arrival check, issue 52) and came with every chatbot conversation's agent.
    SSL contexts are safe to share between threads."""
    import httpx

    return httpx.create_ssl_context()
