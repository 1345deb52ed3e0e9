"""Issue 38 item 8: the dashboard's server is not stalled by one client. Connections with half their headers
or a trickling body block no other client's page and are closed once idle; a 20 MB POST /login is refused
before it is read (no memory growth); a multipart body never reaches Werkzeug 1.0.1's multipart parser;
no response names the server. Each test serves the stand-in source of test_dashboard on a free port."""
from __future__ import annotations

import contextlib
import socket
import time

import httpx
import psutil
import pytest

from .test_dashboard import SECRET, StandIn

pytestmark = pytest.mark.timeout(120)
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def dashboard(monkeypatch):
    from parlai_dialeval.dashboard import server

    monkeypatch.setenv(server.PASSWORD_ENV, SECRET)
    monkeypatch.setattr(server, "CHANNEL_TIMEOUT", 2)  # seconds: the test waits for an idle connection to go
    running = server.start(StandIn(), port=0)
    yield running
    running.stop()


def raw(dashboard, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", dashboard.port), timeout=10)
    sock.sendall(data)
    return sock


def answer(sock: socket.socket) -> bytes:
    got = b""
    with contextlib.suppress(ConnectionResetError, socket.timeout):
        while b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    return got


def test_half_sent_requests_block_no_other_client_and_are_closed_when_idle(dashboard):
    stalled = [raw(dashboard, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") for _ in range(20)]
    stalled.append(raw(dashboard, b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded"
                                  b"\r\nContent-Length: 200\r\n\r\ntoken=ab"))
    started = time.monotonic()
    with httpx.Client(base_url=dashboard.url, timeout=5) as web:
        assert web.get("/login").status_code == 200
        assert web.post("/login", data={"token": SECRET}).status_code == 302
        assert "Progress" in web.get("/").text
    assert time.monotonic() - started < 3
    for sock in stalled:  # idle past CHANNEL_TIMEOUT (2 s here): closed by the server, no answer given
        sock.settimeout(15)
        assert sock.recv(100) == b""
        sock.close()


def test_a_20_mb_login_is_refused_unread_and_multipart_never_parsed(dashboard, monkeypatch):
    import werkzeug.formparser

    parsed = []
    monkeypatch.setattr(werkzeug.formparser.MultiPartParser, "parse", lambda *a, **k: parsed.append(a))
    process = psutil.Process()
    before = process.memory_info().rss
    head = (b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 20971520\r\n\r\n")
    started = time.monotonic()
    sock = raw(dashboard, head + b"token=" + b"a" * 65536)
    got = answer(sock)
    sock.close()
    assert got.startswith(b"HTTP/1.1 413") and time.monotonic() - started < 2, got[:300]
    # the same without a length: chunks until the server stops reading
    sock = raw(dashboard, b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        for _ in range(20 * 16):  # 20 MB
            sock.sendall(chunk)
    assert answer(sock).startswith(b"HTTP/1.1 413")
    sock.close()
    assert process.memory_info().rss - before < 8 * 2**20
    with httpx.Client(base_url=dashboard.url, timeout=5) as web:
        form = web.post("/login", files={"token": ("t.txt", SECRET.encode())})
        assert form.status_code == 415 and parsed == []
        assert web.post("/login", data={"token": "x" * 2000}).status_code == 413  # the sign-in form is small
        signed = web.post("/login", data={"token": SECRET})
        assert signed.status_code == 302
        assert web.post("/participant/w/bonus", files={"csrf": ("c", b"c")}).status_code == 415 and parsed == []


def test_no_response_names_the_server(dashboard):
    with httpx.Client(base_url=dashboard.url, timeout=5) as web:
        responses = [web.get("/"), web.get("/login"), web.post("/login", data={"token": "wrong"}),
                     web.post("/login", content=b"x" * 20000, headers={"Content-Type": FORM})]
        web.post("/login", data={"token": SECRET})
        responses += [web.get("/"), web.get("/nothing/here"), web.get("/plot/certify.png")]
    assert [r.status_code for r in responses] == [401, 200, 401, 413, 200, 404, 404]
    for response in responses:
        assert "server" not in response.headers and "x-powered-by" not in response.headers, response.headers
        assert not any(word in response.text.lower() for word in ("waitress", "werkzeug", "python", "traceback"))

