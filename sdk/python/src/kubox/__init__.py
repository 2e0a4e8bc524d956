"""kubox: claim a sandbox, run code in it, move files, release it.

::

    from kubox import Sandbox

    with Sandbox.claim(pool="python") as sb:
        print(sb.run("python3 -c 'print(1)'").stdout)

The synchronous API is :class:`Sandbox` (and :class:`Client` for shared settings); the asyncio
one, with the same surface, is :class:`AsyncSandbox` and :class:`AsyncClient`.
"""

from ._sync import Client, Files, FileWatch, KeepAlive, Process, Sandbox
from .aio import AsyncClient, AsyncFiles, AsyncKeepAlive, AsyncProcess, AsyncSandbox, ClaimToken
from ._files import AsyncFileWatch
from .errors import (APIError, ClaimFailedError, CommandError, ConfigError, ConflictError, ForbiddenError,
                     KuboxError, MemoryNotKeptError, NotFoundError, SandboxConnectionError, SandboxNotReadyError,
                     SandboxTimeoutError, SnapshotFailedError, UnauthorizedError)
from .types import CodeContext, CodeLogs, CodeResult, CommandResult, Execution, ExecutionError, ExitEvent, FileEvent, FileInfo, OutputDropped, OutputEvent, ProcessEvent

__version__ = "0.1.0"

__all__ = [
    "Sandbox", "Client", "Process", "Files", "FileWatch", "KeepAlive",
    "AsyncSandbox", "AsyncClient", "AsyncProcess", "AsyncFiles", "AsyncFileWatch", "AsyncKeepAlive", "ClaimToken",
    "CommandResult", "CodeContext", "CodeResult", "CodeLogs", "Execution", "ExecutionError", "OutputEvent", "OutputDropped", "ExitEvent", "ProcessEvent", "FileInfo", "FileEvent",
    "KuboxError", "ConfigError", "ClaimFailedError", "SandboxTimeoutError", "SandboxConnectionError",
    "CommandError", "APIError", "UnauthorizedError", "ForbiddenError", "NotFoundError", "ConflictError",
    "SandboxNotReadyError", "MemoryNotKeptError", "SnapshotFailedError",
]
