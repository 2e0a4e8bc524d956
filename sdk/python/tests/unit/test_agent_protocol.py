"""The agent client's protocol handling against a scripted HTTP server (no agent): Connect
envelopes, and a router's 503 tried again while its cache catches up."""

from __future__ import annotations

import http.server
import json
import threading

import httpx
import pytest

import kubox
from kubox._agent import Agent, EnvelopeReader, envelope


class Scripted(http.server.BaseHTTPRequestHandler):
    answers: list = []
    seen: list = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Scripted.seen.append(self.path)
        status, body = Scripted.answers.pop(0) if len(Scripted.answers) > 1 else Scripted.answers[0]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Scripted.seen = []
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def agent(url: str, retry: bool) -> Agent:
    async def resolve():
        return url, {"Authorization": "Bearer t"}

    return Agent(httpx.AsyncClient(), resolve, "sandbox ns/s", lambda: retry)


NOT_READY = (503, {"error": "sandbox ns/s is not ready: DependenciesNotReady", "code": 503})


@pytest.mark.asyncio
async def test_a_503_of_a_sandbox_seen_ready_is_tried_again(server):
    Scripted.answers = [NOT_READY, NOT_READY, (200, {"processId": "p1", "exit": {"exitCode": 0}})]
    got = await agent(server, retry=True).call("ProcessService", "RunProcess", {"spec": {"argv": ["true"]}})
    assert got["processId"] == "p1" and len(Scripted.seen) == 3


@pytest.mark.asyncio
async def test_a_503_is_final_when_the_sandbox_was_not_seen_ready(server):
    Scripted.answers = [NOT_READY, (200, {})]
    with pytest.raises(kubox.SandboxNotReadyError, match="DependenciesNotReady"):
        await agent(server, retry=False).call("ProcessService", "RunProcess", {})
    assert len(Scripted.seen) == 1


@pytest.mark.asyncio
async def test_retrying_a_503_gives_up(server, monkeypatch):
    monkeypatch.setattr("kubox._agent.NOT_READY_GRACE", 0.2)
    Scripted.answers = [NOT_READY]
    with pytest.raises(kubox.SandboxNotReadyError):
        await agent(server, retry=True).call("ProcessService", "RunProcess", {})
    assert 2 <= len(Scripted.seen) <= 10


def test_envelopes_split_across_reads():
    data = envelope({"a": 1}) + envelope({"b": 2}) + bytes([2, 0, 0, 0, 2]) + b"{}"
    r = EnvelopeReader()
    got = []
    for i in range(0, len(data), 3):
        got += r.feed(data[i:i + 3])
    assert got == [(0, {"a": 1}), (0, {"b": 2}), (2, {})] and r.pending == 0
