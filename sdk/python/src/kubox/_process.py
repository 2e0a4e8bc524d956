"""Streamed processes (asyncio): output events as they arrive, stdin, signals, terminals."""

from __future__ import annotations

import asyncio
import codecs
import datetime as _dt
import inspect
import signal as _signal
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from ._agent import Agent, Method
from ._files import WriteData, chunks
from ._proto.kubox.agent.v1 import process_pb2 as pb
from .errors import APIError, ConfigError, KuboxError, SandboxConnectionError
from .types import CommandResult, ExitEvent, OutputDropped, OutputEvent, ProcessEvent

#: A command: a string runs with /bin/sh -c (pipes, redirections); a sequence is the program and
#: its arguments, run without a shell.
Command = Union[str, Sequence[str]]
#: Called with the text of each piece of output; may be a coroutine function.
OutputCallback = Callable[[str], Any]
#: A process's stdin: True keeps it open for send_input; bytes or text are written and it is
#: closed; a binary file object or an (async) iterable of bytes is copied in the background and
#: then it is closed.
Stdin = Union[bool, WriteData, None]
#: Seconds, or a timedelta.
Seconds = Union[float, int, _dt.timedelta]

_SERVICE = pb.DESCRIPTOR.services_by_name["ProcessService"]
START = Method(_SERVICE, "StartProcess", pb.StartProcessRequest, pb.StartProcessResponse, streams=True)
RUN = Method(_SERVICE, "RunProcess", pb.RunProcessRequest, pb.RunProcessResponse)
SEND_INPUT = Method(_SERVICE, "SendInput", pb.SendInputRequest, pb.SendInputResponse)
SEND_SIGNAL = Method(_SERVICE, "SendSignal", pb.SendSignalRequest, pb.SendSignalResponse)
RESIZE_PTY = Method(_SERVICE, "ResizePty", pb.ResizePtyRequest, pb.ResizePtyResponse)
ATTACH = Method(_SERVICE, "AttachProcess", pb.AttachProcessRequest, pb.AttachProcessResponse, streams=True)
LIST = Method(_SERVICE, "ListProcesses", pb.ListProcessesRequest, pb.ListProcessesResponse)
_STREAMS = {pb.OUTPUT_STREAM_STDOUT: "stdout", pb.OUTPUT_STREAM_STDERR: "stderr", pb.OUTPUT_STREAM_PTY: "pty"}
#: A message of StartProcess's or AttachProcess's stream: both carry a ProcessEvent.
ProcessStream = Union[pb.StartProcessResponse, pb.AttachProcessResponse]
# How many times a process is followed again (AttachProcess) after its stream broke.
_REATTACH_LIMIT = 3
# The most stdin one SendInput carries.
_STDIN_CHUNK = 64 << 10


def seconds(value: Optional[Seconds], what: str) -> Optional[float]:
    """``value`` in seconds (a timedelta converted); None stays None."""
    if value is None:
        return None
    s = value.total_seconds() if isinstance(value, _dt.timedelta) else float(value)
    if s <= 0:
        raise ConfigError(f"{what} must be positive, not {value!r}")
    return s


def process_spec(cmd: Command, *, env: Optional[Mapping[str, str]], cwd: Optional[str],
                 timeout: Optional[Seconds]) -> pb.ProcessSpec:
    """The agent's ProcessSpec for a command."""
    spec = pb.ProcessSpec()
    if isinstance(cmd, str):
        if not cmd.strip():
            raise ConfigError("the command is empty: give a shell line (\"python3 -V\") or a list "
                              "([\"python3\", \"-V\"])")
        spec.shell_command = cmd
    else:
        argv = [str(a) for a in cmd]
        if not argv:
            raise ConfigError("the command is an empty list: give the program and its arguments, "
                              "e.g. [\"python3\", \"-V\"]")
        spec.argv.extend(argv)
    if env:
        spec.env.update({str(k): str(v) for k, v in env.items()})
    if cwd:
        spec.cwd = cwd
    t = seconds(timeout, "timeout")
    if t:
        spec.timeout.FromNanoseconds(round(t * 1e9))
    return spec


def to_bytes(data: Union[bytes, bytearray, memoryview, str]) -> bytes:
    """Text as UTF-8, bytes as they are."""
    return data.encode() if isinstance(data, str) else bytes(data)


def result_of(msg: pb.RunProcessResponse) -> CommandResult:
    """The CommandResult of a RunProcess answer."""
    ex = exit_of(msg.exit)
    return CommandResult(exit_code=ex.exit_code, stdout_bytes=msg.stdout, stderr_bytes=msg.stderr,
                         stdout_truncated=msg.stdout_truncated, stderr_truncated=msg.stderr_truncated,
                         signal=ex.signal, timed_out=ex.timed_out)


def exit_of(ex: pb.ProcessExit) -> ExitEvent:
    """The ExitEvent of a ProcessExit."""
    return ExitEvent(exit_code=ex.exit_code, signal=ex.signal, timed_out=ex.timed_out)


def signal_name(sig: Union[str, int]) -> str:
    """``"SIGINT"`` for ``"SIGINT"``, ``"INT"``, ``2`` or ``signal.SIGINT``."""
    if isinstance(sig, str):
        name = sig.upper()
        return name if name.startswith("SIG") else "SIG" + name
    return _signal.Signals(int(sig)).name


class AsyncProcess:
    """A process started with :meth:`AsyncSandbox.start`.

    Iterate it (``async for event in proc``) for its :class:`OutputEvent`, :class:`OutputDropped`
    and finally :class:`ExitEvent`; or give ``on_stdout``/``on_stderr`` to ``start`` and
    ``await proc.wait()``. Output is held back by the agent (the process pauses) while nobody
    reads it, so nothing is lost. Use it as an async context manager to kill the process if it is
    still running when the block ends.
    """

    def __init__(self, agent: Agent, stream: AsyncGenerator[ProcessStream, None], started: pb.ProcessStarted, *,
                 pty: bool, on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback]) -> None:
        self._agent = agent
        self._stream = stream
        #: The agent's id of the process.
        self.id: str = started.process_id
        #: The process's PID inside the sandbox.
        self.pid: int = started.pid
        #: How the process ended; None while it runs (or until its exit event was read).
        self.exit: Optional[ExitEvent] = None
        self._pty = pty
        self._callbacks = {"stdout": on_stdout, "stderr": on_stderr, "pty": on_stdout}
        self._decoders = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in ("stdout", "stderr", "pty")}
        self._next: Dict[str, int] = {"stdout": 0, "stderr": 0, "pty": 0}
        self._events = self._follow()
        self._about = f"process {self.id} in {agent.object}"
        self._stdin_task: Optional["asyncio.Task[None]"] = None
        #: Why copying ``stdin`` (a file object or an iterable) to the process failed; None
        #: while it goes well. ``wait()`` raises it.
        self.stdin_error: Optional[BaseException] = None

    def __repr__(self) -> str:
        return f"<AsyncProcess {self.id} pid={self.pid} exit={self.exit}>"

    def __aiter__(self) -> AsyncIterator[ProcessEvent]:
        return self._events

    async def wait(self) -> int:
        """Reads the rest of the output (calling the callbacks) and returns the exit code."""
        async for _ in self._events:
            pass
        if self.exit is None:
            raise SandboxConnectionError(f"{self._about}: the output stream ended before the process exited")
        if self.stdin_error is not None:
            raise KuboxError(f"{self._about}: copying its stdin failed: {self.stdin_error}") from self.stdin_error
        return self.exit.exit_code

    async def send_input(self, data: Union[bytes, str]) -> None:
        """Writes to the process's stdin (start it with ``stdin=True``)."""
        raw = to_bytes(data)
        for i in range(0, max(len(raw), 1), _STDIN_CHUNK):
            await self._agent.call(SEND_INPUT, pb.SendInputRequest(process_id=self.id, data=raw[i:i + _STDIN_CHUNK]),
                                   about=self._about)

    async def close_input(self) -> None:
        """Closes the process's stdin (on a terminal: sends Ctrl-D), so that it sees end of file."""
        await self._agent.call(SEND_INPUT, pb.SendInputRequest(process_id=self.id, close_stdin=True), about=self._about)

    async def signal(self, sig: Union[str, int]) -> None:
        """Sends a signal (``"SIGINT"``, ``signal.SIGTERM``, ``9``) to the process's group."""
        await self._agent.call(SEND_SIGNAL, pb.SendSignalRequest(process_id=self.id, signal=signal_name(sig)),
                               about=self._about)

    async def kill(self) -> None:
        """Kills the process group (SIGKILL); a process that has exited is left alone."""
        try:
            await self.signal("SIGKILL")
        except APIError as e:
            if e.code not in ("not_found", "failed_precondition"):
                raise

    async def resize(self, rows: int, cols: int) -> None:
        """Resizes the terminal of a process started with ``tty=(rows, cols)``."""
        if not self._pty:
            raise ConfigError(f"{self._about} has no terminal: start it with tty=(rows, cols) to resize it")
        size = pb.PtySize(rows=rows, cols=cols)
        await self._agent.call(RESIZE_PTY, pb.ResizePtyRequest(process_id=self.id, size=size), about=self._about)

    async def aclose(self) -> None:
        """Stops following the process (it keeps running in the sandbox) and copying its stdin."""
        if self._stdin_task is not None:
            self._stdin_task.cancel()
        await self._events.aclose()

    async def __aenter__(self) -> "AsyncProcess":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            if self.exit is None:
                await self.kill()
        finally:
            await self.aclose()

    async def _copy_stdin(self, data: WriteData) -> None:
        """Copies data to stdin, then closes it. A process that exits first ends the copy."""
        try:
            async for chunk in chunks(data):
                await self.send_input(chunk)
            await self.close_input()
        except APIError as e:
            if e.code not in ("not_found", "failed_precondition"):  # the process is gone or its stdin closed
                self.stdin_error = e
        except (KuboxError, OSError) as e:  # the connection, or reading the local file, failed
            self.stdin_error = e
            try:  # let the process see the end of its input rather than wait for more
                await self.close_input()
            except KuboxError:
                pass

    async def _follow(self) -> AsyncGenerator[ProcessEvent, None]:
        """The process's events; a broken stream is followed again from the last byte seen."""
        stream, attempts = self._stream, 0
        while True:
            try:
                async for msg in stream:
                    for ev in self._events_of(msg.event):
                        await self._callback(ev)
                        yield ev
                        if isinstance(ev, ExitEvent):
                            if self._stdin_task is not None:
                                self._stdin_task.cancel()  # nothing reads the rest
                            return
                raise SandboxConnectionError(f"{self._about}: the stream ended before the process exited")
            except SandboxConnectionError:
                if attempts >= _REATTACH_LIMIT:
                    raise
                attempts += 1
                stream = self._agent.stream(ATTACH, pb.AttachProcessRequest(
                    process_id=self.id, stdout_offset=self._next["stdout"] + self._next["pty"],
                    stderr_offset=self._next["stderr"], flow_control=True), about=self._about)

    def _events_of(self, ev: pb.ProcessEvent) -> Tuple[ProcessEvent, ...]:
        kind = ev.WhichOneof("event")
        if kind == "output":
            out = ev.output
            stream = _STREAMS.get(out.stream, "stdout")
            offset, data = out.offset, out.data
            # After a reattach the agent may repeat bytes already seen: skip them.
            seen = self._next[stream] - offset
            if seen >= len(data):
                return ()
            if seen > 0:
                offset, data = offset + seen, data[seen:]
            self._next[stream] = offset + len(data)
            return (OutputEvent(stream=stream, data=data, offset=offset,  # type: ignore[arg-type]
                                text=self._decoders[stream].decode(data)),)
        if kind == "dropped":
            d = ev.dropped
            stream = _STREAMS.get(d.stream, "stdout")
            self._next[stream] = d.offset + d.length
            return (OutputDropped(stream=stream, offset=d.offset, length=d.length),)  # type: ignore[arg-type]
        if kind == "exited":
            self.exit = exit_of(ev.exited)
            return (self.exit,)
        return ()

    async def _callback(self, ev: ProcessEvent) -> None:
        if not isinstance(ev, OutputEvent):
            return
        fn = self._callbacks.get(ev.stream)
        if fn is not None and ev.text:
            r = fn(ev.text)
            if inspect.isawaitable(r):
                await r


async def start_process(agent: Agent, cmd: Command, *, env: Optional[Mapping[str, str]] = None,
                        cwd: Optional[str] = None, timeout: Optional[Seconds] = None,
                        stdin: Stdin = None, tty: Optional[Tuple[int, int]] = None,
                        on_stdout: Optional[OutputCallback] = None,
                        on_stderr: Optional[OutputCallback] = None) -> AsyncProcess:
    """Starts ``cmd`` and returns once the agent started it."""
    req = pb.StartProcessRequest(spec=process_spec(cmd, env=env, cwd=cwd, timeout=timeout), flow_control=True,
                                 stdin=stdin is not None and stdin is not False)
    if tty is not None:
        rows, cols = tty
        req.pty.rows, req.pty.cols = rows, cols
    stream = agent.stream(START, req)
    first = await stream.__anext__()
    if first.event.WhichOneof("event") != "started":
        await stream.aclose()
        raise KuboxError(f"{agent.object}: the agent did not report the process as started: {first}")
    proc = AsyncProcess(agent, stream, first.event.started, pty=tty is not None, on_stdout=on_stdout,
                        on_stderr=on_stderr)
    if isinstance(stdin, (bytes, bytearray, memoryview, str)):
        await proc.send_input(stdin)  # type: ignore[arg-type]
        await proc.close_input()
    elif stdin is not None and not isinstance(stdin, bool):
        proc._stdin_task = asyncio.create_task(proc._copy_stdin(stdin))
    return proc
