"""Processes through a real kubox-agent: run to completion, stream, stdin, signals, terminals."""

from __future__ import annotations

import signal

import pytest

import kubox
from kubox import CommandError, ExitEvent, OutputEvent, Sandbox


@pytest.fixture
def sb(agent):
    s = Sandbox.attach(agent.url, agent.token, name="local")
    yield s
    s.close()


def test_run_returns_output_and_exit_code(sb):
    r = sb.run("echo out; echo err >&2; exit 3")
    assert (r.exit_code, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
    assert sb.run(["printf", "%s|", "a b", "c"]).stdout == "a b|c|"  # a list is argv: no shell splitting


def test_run_env_cwd_stdin(sb, tmp_path):
    r = sb.run("echo $GREETING from $(pwd); cat", env={"GREETING": "hello"}, cwd=str(tmp_path), stdin="piped")
    assert r.stdout == f"hello from {tmp_path}\npiped"


def test_run_timeout_stops_the_process(sb):
    # The agent stops a timed-out process group with SIGTERM (SIGKILL only after its grace period),
    # which ends sleep.
    r = sb.run(["sleep", "30"], timeout=0.5)
    assert r.timed_out and r.signal == "SIGTERM" and r.exit_code == 128 + 15


def test_run_check_raises_with_the_result(sb):
    with pytest.raises(CommandError) as e:
        sb.run("echo boom >&2; exit 2", check=True)
    assert e.value.result.exit_code == 2 and "boom" in str(e.value)


def test_run_output_limit_is_reported(sb):
    r = sb.run("head -c 5000 /dev/zero", max_output_bytes=1000)
    assert len(r.stdout_bytes) == 1000 and r.stdout_truncated


def test_run_binary_output_is_kept_as_bytes(sb):
    r = sb.run(["printf", "\\377\\000\\001"])
    assert r.stdout_bytes == b"\xff\x00\x01"


def test_empty_command_is_refused_before_any_request(sb):
    with pytest.raises(kubox.ConfigError, match="empty"):
        sb.run("  ")
    with pytest.raises(kubox.ConfigError, match="empty list"):
        sb.run([])


def test_start_streams_output_in_order_as_written(sb, tmp_path):
    go = tmp_path / "go"
    # The process writes its first lines, then waits for the test, which creates the file only
    # once it has seen them: output arrives while the process runs, not when it ends.
    p = sb.start(f"echo 1; echo 2; while [ ! -e {go} ]; do sleep 0.02; done; echo 3; echo done >&2; exit 4",
                 timeout=60)
    it = iter(p)
    first = ""
    while first != "1\n2\n":
        first += next(it).text
    go.touch()
    rest = list(it)
    outs = [e for e in rest if isinstance(e, OutputEvent)]
    assert [e.text for e in outs if e.stream == "stdout"] == ["3\n"]
    assert [e.offset for e in outs if e.stream == "stdout"] == [4]
    assert [e.text for e in outs if e.stream == "stderr"] == ["done\n"]
    assert rest[-1] == ExitEvent(exit_code=4) and p.exit.exit_code == 4


def test_start_stdin_and_callbacks(sb):
    lines = []
    p = sb.start("while read l; do echo got $l; done", stdin=True, on_stdout=lines.append)
    p.send_input("a\n")
    p.send_input(b"b\n")
    p.close_input()
    assert p.wait() == 0
    assert "".join(lines) == "got a\ngot b\n"


def test_start_with_stdin_bytes_closes_it(sb):
    out = []
    assert sb.start("wc -c", stdin=b"12345", on_stdout=out.append).wait() == 0
    assert "".join(out).strip() == "5"


def test_signal_reaches_the_process_group(sb):
    p = sb.start("trap 'echo term; exit 9' TERM; echo ready; while :; do sleep 0.05; done")
    it = iter(p)
    assert next(it).text == "ready\n"
    p.signal(signal.SIGTERM)
    rest = list(it)
    assert any(isinstance(e, OutputEvent) and e.text == "term\n" for e in rest)
    assert p.exit.exit_code == 9


def test_kill_and_context_manager(sb):
    with sb.start(["sleep", "60"]) as p:
        pid = p.pid
        assert pid > 0
    # Leaving the block killed it: the agent lists it as exited by SIGKILL.
    r = sb.run(f"kill -0 {pid} 2>/dev/null && echo alive || echo gone")
    assert r.stdout == "gone\n"


def test_tty_and_resize(sb):
    p = sb.start("stty size; read x; stty size", tty=(30, 100), stdin=True)
    it = iter(p)
    first = []
    while "30 100" not in "".join(e.text for e in first):
        first.append(next(it))
    p.resize(50, 160)
    p.send_input("\n")
    rest = [e for e in it if isinstance(e, OutputEvent)]
    assert "50 160" in "".join(e.text for e in rest)
    assert {e.stream for e in first + rest} == {"pty"}  # a terminal has one stream
    assert p.exit.exit_code == 0


def test_resize_without_tty_is_refused(sb):
    p = sb.start(["true"])
    with pytest.raises(kubox.ConfigError, match="no terminal"):
        p.resize(10, 10)
    p.wait()


def test_unknown_process_is_not_found(sb):
    p = sb.start(["true"])
    p.wait()
    p.aio.id = "does-not-exist"
    with pytest.raises(kubox.NotFoundError, match="does-not-exist"):
        p.signal("SIGTERM")


def test_wrong_token_is_unauthorized(agent):
    bad = Sandbox.attach(agent.url, "x" * 64, name="local")
    with pytest.raises(kubox.UnauthorizedError) as e:
        bad.run("true")
    assert e.value.status == 401 and "local" in str(e.value)
    bad.close()


def test_unreachable_agent_is_a_connection_error(agent):
    agent.stop()
    sb = Sandbox.attach(agent.url, agent.token, name="gone")
    with pytest.raises(kubox.SandboxConnectionError, match="cannot reach"):
        sb.run("true")
    sb.close()


def test_the_sync_api_serves_several_threads_at_once(sb, tmp_path, barrier):
    import concurrent.futures

    # Each command waits for all four: had the calls queued, the first would never end (its
    # timeout kills it, and the assertion below fails).
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: sb.run(barrier(tmp_path, i, 4), timeout=60), range(4)))
    assert [(r.stdout, r.timed_out) for r in results] == [(f"{i}\n", False) for i in range(4)]


def test_the_sync_api_works_inside_a_running_event_loop(agent):
    """Jupyter runs an event loop in the main thread: the blocking API must still work there."""
    import asyncio

    async def notebook_cell() -> str:
        with Sandbox.attach(agent.url, agent.token) as s:
            return s.run("echo from a cell").stdout

    assert asyncio.run(notebook_cell()) == "from a cell\n"


def test_run_gives_up_on_an_agent_that_never_answers(sb, monkeypatch):
    import socket as _socket

    monkeypatch.setattr("kubox.aio.RUN_ANSWER_GRACE", 0.5)
    silent = _socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    try:
        mute = Sandbox.attach("http://127.0.0.1:%d" % silent.getsockname()[1], "t", name="mute")
        with pytest.raises(kubox.SandboxTimeoutError, match="mute"):
            mute.run("true", timeout=0.5)
        mute.close()
    finally:
        silent.close()


def test_start_copies_a_file_object_or_an_iterable_to_stdin(sb):
    import hashlib
    import io

    data = bytes(range(256)) * 4096  # 1 MiB: many SendInput calls
    out = []
    assert sb.start("sha256sum", stdin=io.BytesIO(data), on_stdout=out.append).wait() == 0
    assert "".join(out).split()[0] == hashlib.sha256(data).hexdigest()
    out.clear()
    assert sb.start("cat", stdin=(line.encode() for line in ["a\n", "b\n"]), on_stdout=out.append).wait() == 0
    assert "".join(out) == "a\nb\n"


def test_stdin_copy_ends_quietly_when_the_process_exits_first(sb):
    def endless():
        while True:
            yield b"y\n"

    p = sb.start("head -n 3", stdin=endless())
    assert p.wait() == 0  # head exits after three lines; the copy stops without an error


def test_kill_of_an_exited_process_is_fine(sb):
    p = sb.start(["true"])
    p.wait()
    p.kill()  # nothing to kill: not an error


def test_a_failing_stdin_source_is_reported_by_wait(sb):
    class Broken:
        def read(self, n: int) -> bytes:
            raise OSError("disk gone")

    p = sb.start("cat >/dev/null", stdin=Broken(), timeout=60)
    with pytest.raises(kubox.KuboxError, match="copying its stdin failed: disk gone"):
        p.wait()
    assert isinstance(p.stdin_error, OSError)
    # Its stdin was closed, so cat ended at once instead of waiting for the timeout.
    assert not p.exit.timed_out and p.exit.exit_code == 0
