"""Values the SDK returns: command results, process events, file descriptions."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

__all__ = [
    "CommandResult",
    "OutputEvent",
    "OutputDropped",
    "ExitEvent",
    "ProcessEvent",
    "FileInfo",
    "FileEvent",
    "CodeContext",
    "CodeResult",
    "ExecutionError",
    "CodeLogs",
    "Execution",
]

Stream = Literal["stdout", "stderr", "pty"]


@dataclass(frozen=True)
class CommandResult:
    """The outcome of a command run to completion (:meth:`Sandbox.run`).

    A non-zero ``exit_code`` is not an error: the command ran. ``stdout`` and ``stderr`` are the
    output decoded as UTF-8 (undecodable bytes replaced); ``stdout_bytes``/``stderr_bytes`` are
    the bytes as the process wrote them.
    """

    #: The exit status; 128+n when signal n killed the process (as a shell reports it).
    exit_code: int
    #: Standard output, up to the agent's limit (1 MiB per stream by default).
    stdout_bytes: bytes = b""
    #: Standard error, up to the agent's limit.
    stderr_bytes: bytes = b""
    #: True when the process wrote more to stdout than is returned.
    stdout_truncated: bool = False
    #: True when the process wrote more to stderr than is returned.
    stderr_truncated: bool = False
    #: The signal that killed the process (``"SIGKILL"``); empty when it exited.
    signal: str = ""
    #: True when the agent killed the process because its ``timeout`` passed.
    timed_out: bool = False

    @property
    def stdout(self) -> str:
        """Standard output as text (UTF-8, undecodable bytes replaced)."""
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        """Standard error as text (UTF-8, undecodable bytes replaced)."""
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0."""
        return self.exit_code == 0


@dataclass(frozen=True)
class OutputEvent:
    """Output a streamed process wrote (:meth:`Sandbox.start`)."""

    #: ``"stdout"``, ``"stderr"``, or ``"pty"`` for a process on a terminal.
    stream: Stream
    #: The bytes, as the process wrote them.
    data: bytes
    #: Where ``data`` starts in its stream (bytes written before it).
    offset: int
    #: ``data`` decoded as UTF-8; a character split between two events is completed in the
    #: second one.
    text: str = ""


@dataclass(frozen=True)
class OutputDropped:
    """Output the agent could not keep for a slow reader (only without flow control)."""

    #: The stream the bytes were lost from.
    stream: Stream
    #: Where the lost bytes start in the stream.
    offset: int
    #: How many bytes were lost.
    length: int


@dataclass(frozen=True)
class ExitEvent:
    """A streamed process ended; always the last event."""

    #: The exit status; 128+n when signal n killed it.
    exit_code: int
    #: The signal that killed the process (``"SIGTERM"``); empty when it exited.
    signal: str = ""
    #: True when the agent killed the process because its ``timeout`` passed.
    timed_out: bool = False


#: What iterating a :class:`Process` yields.
ProcessEvent = Union[OutputEvent, OutputDropped, ExitEvent]


@dataclass(frozen=True)
class FileInfo:
    """A file, directory or link in a sandbox."""

    #: The last element of ``path``.
    name: str
    #: The absolute path in the sandbox.
    path: str
    #: ``"file"``, ``"directory"``, ``"symlink"`` or ``"other"``.
    type: str
    #: Size in bytes.
    size: int = 0
    #: Permission bits (``0o644``).
    mode: int = 0
    #: When the content last changed (UTC); ``None`` when the agent did not say.
    modified: Optional[_dt.datetime] = field(default=None, compare=False)
    #: What a symbolic link points to; empty otherwise.
    symlink_target: str = ""

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return self.type == "directory"

    @property
    def is_file(self) -> bool:
        """True for a regular file."""
        return self.type == "file"


@dataclass(frozen=True)
class FileEvent:
    """A change :meth:`Files.watch` reports."""

    #: The changed file's path in the sandbox.
    path: str
    #: ``"create"``, ``"write"``, ``"remove"``, ``"rename"`` or ``"chmod"``.
    op: str


@dataclass(frozen=True)
class CodeContext:
    """A context of the sandbox's code interpreter: one interpreter whose variables, imports and
    working directory last from one :meth:`Sandbox.run_code` to the next."""

    #: Names the context in ``run_code(context=...)``, restart and remove.
    id: str
    #: python, javascript or bash.
    language: str
    #: The interpreter's working directory when it started.
    cwd: str = ""


@dataclass(frozen=True)
class CodeResult:
    """One result of an execution as a MIME bundle (E2B's): every representation it has. ``png``,
    ``jpeg`` and ``pdf`` are base64, as on the wire; ``json`` is the decoded value."""

    text: Optional[str] = None
    html: Optional[str] = None
    markdown: Optional[str] = None
    svg: Optional[str] = None
    png: Optional[str] = None
    jpeg: Optional[str] = None
    pdf: Optional[str] = None
    latex: Optional[str] = None
    json: Optional[object] = None
    javascript: Optional[str] = None
    #: True for the value of the code's last expression.
    is_main_result: bool = False


@dataclass(frozen=True)
class ExecutionError:
    """An exception the code raised; the context lives on."""

    #: The exception's type, e.g. ZeroDivisionError.
    name: str
    value: str
    traceback: str


@dataclass
class CodeLogs:
    """What an execution printed, in the pieces it came in."""

    stdout: list = field(default_factory=list)
    stderr: list = field(default_factory=list)


@dataclass
class Execution:
    """The outcome of :meth:`Sandbox.run_code`. An exception in the code is ``error``, not a
    raised exception."""

    results: list = field(default_factory=list)
    logs: CodeLogs = field(default_factory=CodeLogs)
    error: Optional[ExecutionError] = None
    #: The context's count of executions so far, this one included.
    execution_count: int = 0
    #: The stream was longer than what ``logs`` keeps: its first 1 MiB
    #: (``kubox._code.DEFAULT_CODE_OUTPUT_BYTES``); the callbacks got all of it.
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    #: Results were dropped: their total passed 32 MiB (``kubox._code.DEFAULT_CODE_RESULT_BYTES``).
    results_truncated: bool = False

    @property
    def text(self) -> Optional[str]:
        """The main result's text; None when there is none."""
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None
