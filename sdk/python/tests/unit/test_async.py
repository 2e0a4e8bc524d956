"""The asyncio API against a real kubox-agent, and a stream broken mid-way."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

import kubox
from kubox import AsyncSandbox, ExitEvent, OutputEvent


@pytest.mark.asyncio
async def test_async_run_start_files(agent):
    async with AsyncSandbox.attach(agent.url, agent.token, name="local") as sb:
        r = await sb.run("echo $X", env={"X": "async"})
        assert r.stdout == "async\n"
        await sb.files.write("/a.txt", "data")
        assert await sb.files.read_text("/a.txt") == "data"
        assert [e.name for e in await sb.files.list("/")] == ["a.txt"]
        p = await sb.start("echo one; echo two >&2")
        events = [e async for e in p]
        assert {(e.stream, e.text) for e in events if isinstance(e, OutputEvent)} == {("stdout", "one\n"), ("stderr", "two\n")}
        assert events[-1] == ExitEvent(exit_code=0)


@pytest.mark.asyncio
async def test_async_runs_concurrently(agent, tmp_path, barrier):
    # Each command finishes only once all four run at the same time.
    async with AsyncSandbox.attach(agent.url, agent.token) as sb:
        results = await asyncio.gather(*(sb.run(barrier(tmp_path, i, 4), timeout=60) for i in range(4)))
    assert [(r.stdout, r.timed_out) for r in results] == [(f"{i}\n", False) for i in range(4)]


@pytest.mark.asyncio
async def test_async_callbacks_may_be_coroutines(agent):
    got = []

    async def on_out(text: str) -> None:
        await asyncio.sleep(0)
        got.append(text)

    async with AsyncSandbox.attach(agent.url, agent.token) as sb:
        p = await sb.start("echo hi", on_stdout=on_out)
        assert await p.wait() == 0
    assert got == ["hi\n"]


class CuttingProxy:
    """A TCP proxy to the agent that cuts its first connection after ``cut`` bytes of answer,
    as a router restart or a network blip would; later connections pass whole."""

    def __init__(self, port: int, cut: int) -> None:
        self.target, self.cut, self.connections = port, cut, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            limit = self.cut if self.connections == 1 else None
            threading.Thread(target=self._serve, args=(c, limit), daemon=True).start()

    def _serve(self, c: socket.socket, limit) -> None:
        up = socket.create_connection(("127.0.0.1", self.target))
        threading.Thread(target=self._copy, args=(c, up, None), daemon=True).start()
        self._copy(up, c, limit)
        for s in (c, up):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    @staticmethod
    def _copy(src: socket.socket, dst: socket.socket, limit) -> None:
        sent = 0
        try:
            while limit is None or sent < limit:
                data = src.recv(4096 if limit is None else min(4096, limit - sent))
                if not data:
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


def test_broken_stream_is_followed_again_without_loss_or_repeats(agent):
    proxy = CuttingProxy(agent.port, cut=700)
    sb = kubox.Sandbox.attach(proxy.url, agent.token)
    try:
        p = sb.start("seq 1 3000")
        out = "".join(e.text for e in p if isinstance(e, OutputEvent))
        assert out == "".join(f"{i}\n" for i in range(1, 3001))
        assert p.exit.exit_code == 0
        assert proxy.connections >= 2  # the stream really broke and was followed again
    finally:
        sb.close()
        proxy.close()


@pytest.mark.asyncio
async def test_opening_is_awaitable_and_a_context_manager():
    from kubox.aio import Opening

    closed = []

    class Fake:
        async def close(self) -> None:
            closed.append(True)

    async def get():
        return Fake()

    sb = await Opening(get())
    assert isinstance(sb, Fake) and closed == []
    async with Opening(get()) as sb2:
        assert isinstance(sb2, Fake)
    assert closed == [True]
