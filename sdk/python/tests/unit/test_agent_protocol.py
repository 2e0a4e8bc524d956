"""The agent client's protocol handling against a scripted HTTP server (no agent): Connect with
the generated protobuf messages, envelopes, and a router's 503 tried again while its cache
catches up."""

from __future__ import annotations

import http.server
import json
import threading

import httpx
import pytest

import kubox
from kubox._agent import Agent, EnvelopeReader, Method, envelope
from kubox._process import RUN, START
from kubox._proto.kubox.agent.v1 import process_pb2 as pb


class Scripted(http.server.BaseHTTPRequestHandler):
    answers: list = []
    seen: list = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Scripted.seen.append((self.path, self.headers.get("Content-Type"), body))
        status, answer = Scripted.answers.pop(0) if len(Scripted.answers) > 1 else Scripted.answers[0]
        if isinstance(answer, bytes):  # a stream's envelopes
            data, ctype = answer, "application/connect+proto"
        elif isinstance(answer, dict):  # an error, as the agent and the router send it
            data, ctype = json.dumps(answer).encode(), "application/json"
        else:
            data, ctype = answer.SerializeToString(), "application/proto"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
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
    Scripted.answers = [NOT_READY, NOT_READY, (200, pb.RunProcessResponse(process_id="p1", stdout=b"\xffhi"))]
    req = pb.RunProcessRequest(spec=pb.ProcessSpec(argv=["true"]), stdin=b"\x00in")
    got = await agent(server, retry=True).call(RUN, req)
    assert got.process_id == "p1" and got.stdout == b"\xffhi" and len(Scripted.seen) == 3
    path, ctype, body = Scripted.seen[-1]
    assert path == "/kubox.agent.v1.ProcessService/RunProcess" and ctype == "application/proto"
    assert pb.RunProcessRequest.FromString(body) == req


@pytest.mark.asyncio
async def test_a_503_is_final_when_the_sandbox_was_not_seen_ready(server):
    Scripted.answers = [NOT_READY, (200, {})]
    with pytest.raises(kubox.SandboxNotReadyError, match="DependenciesNotReady"):
        await agent(server, retry=False).call(RUN, pb.RunProcessRequest())
    assert len(Scripted.seen) == 1


@pytest.mark.asyncio
async def test_retrying_a_503_gives_up(server, monkeypatch):
    monkeypatch.setattr("kubox._agent.NOT_READY_GRACE", 0.2)
    Scripted.answers = [NOT_READY]
    with pytest.raises(kubox.SandboxNotReadyError):
        await agent(server, retry=True).call(RUN, pb.RunProcessRequest())
    assert 2 <= len(Scripted.seen) <= 10


def test_envelopes_split_across_reads():
    one, two = pb.ProcessStarted(process_id="p1", pid=7), pb.ProcessStarted(process_id="p2")
    data = envelope(one) + envelope(two) + bytes([2, 0, 0, 0, 2]) + b"{}"
    r = EnvelopeReader()
    got = []
    for i in range(0, len(data), 3):
        got += r.feed(data[i:i + 3])
    assert got == [(0, one.SerializeToString()), (0, two.SerializeToString()), (2, b"{}")] and r.pending == 0


def end_of_stream(doc: dict) -> bytes:
    body = json.dumps(doc).encode()
    return bytes([2]) + len(body).to_bytes(4, "big") + body


def started(process_id: str) -> pb.StartProcessResponse:
    return pb.StartProcessResponse(event=pb.ProcessEvent(started=pb.ProcessStarted(process_id=process_id)))


@pytest.mark.asyncio
async def test_a_stream_decodes_its_messages_and_raises_its_error(server):
    Scripted.answers = [(200, envelope(started("p1")) + end_of_stream(
        {"error": {"code": "resource_exhausted", "message": "too many processes"}}))]
    req = pb.StartProcessRequest(spec=pb.ProcessSpec(shell_command="sleep 1"), flow_control=True)
    got = []
    with pytest.raises(kubox.APIError, match="too many processes") as e:
        async for msg in agent(server, retry=False).stream(START, req):
            got.append(msg)
    assert got == [started("p1")] and e.value.code == "resource_exhausted"
    path, ctype, body = Scripted.seen[-1]
    assert path == "/kubox.agent.v1.ProcessService/StartProcess" and ctype == "application/connect+proto"
    assert body[0] == 0 and int.from_bytes(body[1:5], "big") == len(body) - 5
    assert pb.StartProcessRequest.FromString(body[5:]) == req


@pytest.mark.asyncio
async def test_a_stream_without_its_end_message_is_a_broken_connection(server):
    Scripted.answers = [(200, envelope(started("p1")))]
    with pytest.raises(kubox.SandboxConnectionError, match="without its end message"):
        async for _ in agent(server, retry=False).stream(START, pb.StartProcessRequest()):
            pass


@pytest.mark.asyncio
async def test_an_answer_that_is_not_the_message_says_so(server):
    Scripted.answers = [(200, b"\xff\xff\xff")]  # not a RunProcessResponse (sent as a stream's bytes)
    with pytest.raises(kubox.KuboxError, match="not a kubox.agent.v1.RunProcessResponse"):
        await agent(server, retry=False).call(RUN, pb.RunProcessRequest())


def test_methods_are_checked_against_the_generated_service():
    service = pb.DESCRIPTOR.services_by_name["ProcessService"]
    with pytest.raises(TypeError, match="RunProcessRequest and returns kubox.agent.v1.RunProcessResponse"):
        Method(service, "RunProcess", pb.StartProcessRequest, pb.RunProcessResponse)
    with pytest.raises(KeyError):
        Method(service, "Exec", pb.RunProcessRequest, pb.RunProcessResponse)
    with pytest.raises(TypeError, match="StartProcess is a server stream"):
        Method(service, "StartProcess", pb.StartProcessRequest, pb.StartProcessResponse)
    with pytest.raises(TypeError, match="RunProcess is not a server stream"):
        Method(service, "RunProcess", pb.RunProcessRequest, pb.RunProcessResponse, streams=True)
