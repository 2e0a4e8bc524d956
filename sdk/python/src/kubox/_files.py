"""A sandbox's files (asyncio): contents over plain HTTP, metadata and watches over the agent's
FilesystemService."""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
from typing import Any, AsyncGenerator, AsyncIterable, AsyncIterator, BinaryIO, Iterable, List, Optional, Union

from ._agent import Agent, Method
from ._proto.kubox.agent.v1 import filesystem_pb2 as fs
from .errors import KuboxError, NotFoundError
from .types import FileEvent, FileInfo

#: What :meth:`AsyncFiles.write` accepts: bytes, text (UTF-8), a binary file object, or an
#: (async) iterable of byte chunks. Files and iterables are streamed.
WriteData = Union[bytes, bytearray, memoryview, str, BinaryIO, Iterable[bytes], AsyncIterable[bytes]]

_SERVICE = fs.DESCRIPTOR.services_by_name["FilesystemService"]
STAT = Method(_SERVICE, "Stat", fs.StatRequest, fs.StatResponse)
LIST = Method(_SERVICE, "List", fs.ListRequest, fs.ListResponse)
MAKE_DIR = Method(_SERVICE, "MakeDir", fs.MakeDirRequest, fs.MakeDirResponse)
MOVE = Method(_SERVICE, "Move", fs.MoveRequest, fs.MoveResponse)
REMOVE = Method(_SERVICE, "Remove", fs.RemoveRequest, fs.RemoveResponse)
WATCH = Method(_SERVICE, "Watch", fs.WatchRequest, fs.WatchResponse, streams=True)
_TYPES = {fs.FILE_TYPE_FILE: "file", fs.FILE_TYPE_DIRECTORY: "directory", fs.FILE_TYPE_SYMLINK: "symlink",
          fs.FILE_TYPE_OTHER: "other"}
_OPS = {fs.FILE_EVENT_TYPE_CREATE: "create", fs.FILE_EVENT_TYPE_WRITE: "write", fs.FILE_EVENT_TYPE_REMOVE: "remove",
        fs.FILE_EVENT_TYPE_RENAME: "rename", fs.FILE_EVENT_TYPE_CHMOD: "chmod"}
#: Bytes read from a local file per chunk of an upload or a download.
CHUNK = 1 << 20


def file_info(e: fs.FileEntry) -> FileInfo:
    """The FileInfo of the agent's FileEntry."""
    modified = e.modified_time.ToDatetime(tzinfo=_dt.timezone.utc) if e.HasField("modified_time") else None
    return FileInfo(name=e.name, path=e.path, type=_TYPES.get(e.type, "other"),
                    size=e.size, mode=e.mode & 0o7777, modified=modified, symlink_target=e.symlink_target)


async def chunks(data: WriteData) -> AsyncIterator[bytes]:
    """The chunks of a streamed write (or of a process's stdin): a file object read in a worker
    thread, or an (async) iterable of bytes."""
    if hasattr(data, "read"):
        while True:
            chunk = await asyncio.to_thread(data.read, CHUNK)  # type: ignore[union-attr]
            if not chunk:
                return
            yield chunk.encode() if isinstance(chunk, str) else chunk
    elif hasattr(data, "__aiter__"):
        async for chunk in data:  # type: ignore[union-attr]
            yield bytes(chunk)
    else:
        for chunk in data:  # type: ignore[union-attr]
            yield bytes(chunk)


class AsyncFileWatch:
    """Changes in a directory, from :meth:`AsyncFiles.watch`: iterate it for
    :class:`FileEvent`; close it (or leave its ``async with`` block) to stop watching. A watch
    the agent ends (the directory was removed) raises the agent's error, e.g.
    :class:`NotFoundError`."""

    def __init__(self, stream: AsyncGenerator[fs.WatchResponse, None], directory: str) -> None:
        self._stream = stream
        #: The watched directory.
        self.directory = directory
        self._events = self._follow()

    def __aiter__(self) -> AsyncIterator[FileEvent]:
        return self._events

    async def _follow(self) -> AsyncGenerator[FileEvent, None]:
        async for msg in self._stream:
            if msg.HasField("event"):
                yield FileEvent(path=msg.event.path, op=_OPS.get(msg.event.type, "unknown"))

    async def aclose(self) -> None:
        """Stops watching."""
        await self._events.aclose()
        await self._stream.aclose()

    async def __aenter__(self) -> "AsyncFileWatch":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class AsyncFiles:
    """The files of a sandbox. Paths are the sandbox's (absolute, or relative to the agent's
    working directory for contents); when the agent runs with a root directory, inside it."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def _about(self, path: str, what: str = "file") -> str:
        return f"{what} {path} in {self._agent.object}"

    async def read(self, path: str) -> bytes:
        """The file's contents."""
        resp = await self._agent.content("GET", path, about=self._about(path))
        return resp.content

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The file's contents as text."""
        return (await self.read(path)).decode(encoding)

    async def stream(self, path: str) -> AsyncIterator[bytes]:
        """The file's contents in chunks as they arrive, for files too big to hold in memory."""
        resp = await self._agent.content("GET", path, about=self._about(path), stream=True)
        try:
            async for chunk in resp.aiter_bytes():
                yield chunk
        finally:
            await resp.aclose()

    async def download(self, path: str, dest: Union[str, "os.PathLike[str]"]) -> int:
        """Copies the file to the local file ``dest`` (streamed) and returns its size."""
        n = 0
        with open(dest, "wb") as f:
            async for chunk in self.stream(path):
                f.write(chunk)
                n += len(chunk)
        return n

    async def write(self, path: str, data: WriteData, *, mode: Optional[int] = None) -> None:
        """Writes the file atomically (readers see the old or the new contents), creating its
        parent directories. ``data`` may be bytes, text (UTF-8), a binary file object or an
        (async) iterable of chunks; the last three are streamed, so any size works. ``mode``
        (``0o755``) sets the permission bits; by default a new file gets 0644 and a replaced one
        keeps its mode."""
        body: Any
        if isinstance(data, str):
            body = data.encode()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        else:
            body = chunks(data)
        params = {"mode": format(mode & 0o7777, "o")} if mode else None
        resp = await self._agent.content("PUT", path, about=self._about(path), params=params, body=body)
        await resp.aclose()

    async def upload(self, src: Union[str, "os.PathLike[str]"], path: str, *, mode: Optional[int] = None) -> None:
        """Copies the local file ``src`` to ``path`` in the sandbox (streamed)."""
        with open(src, "rb") as f:
            await self.write(path, f, mode=mode)

    async def stat(self, path: str) -> FileInfo:
        """Describes the file; a final symbolic link is described itself, not followed."""
        resp = await self._agent.call(STAT, fs.StatRequest(path=path), about=self._about(path))
        return file_info(resp.entry)

    async def exists(self, path: str) -> bool:
        """True when something exists at ``path``."""
        try:
            await self.stat(path)
        except NotFoundError:
            return False
        return True

    async def list(self, path: str = ".") -> List[FileInfo]:
        """The entries of the directory, sorted by path."""
        resp = await self._agent.call(LIST, fs.ListRequest(path=path, depth=1), about=self._about(path, "directory"))
        return [file_info(e) for e in resp.entries]

    async def make_dir(self, path: str) -> None:
        """Creates the directory and its missing parents; an existing directory is fine."""
        await self._agent.call(MAKE_DIR, fs.MakeDirRequest(path=path, parents=True),
                               about=self._about(path, "directory"))

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Deletes the file, link or empty directory; with ``recursive``, a directory and all in it."""
        await self._agent.call(REMOVE, fs.RemoveRequest(path=path, recursive=recursive), about=self._about(path))

    async def move(self, src: str, dst: str, *, overwrite: bool = False) -> FileInfo:
        """Renames ``src`` to ``dst``; an existing ``dst`` is replaced only with ``overwrite``."""
        resp = await self._agent.call(MOVE, fs.MoveRequest(source=src, destination=dst, overwrite=overwrite),
                                      about=self._about(src))
        return file_info(resp.entry)

    async def watch(self, path: str, *, recursive: bool = False) -> AsyncFileWatch:
        """Watches the directory (and, with ``recursive``, below it). Returns once the agent
        watches, so every change made after it returns is reported."""
        about = self._about(path, "directory")
        stream = self._agent.stream(WATCH, fs.WatchRequest(directory=path, recursive=recursive), about=about)
        try:
            first = await stream.__anext__()
        except StopAsyncIteration:
            raise KuboxError(f"{about}: the agent ended the watch before it started") from None
        if not first.HasField("started"):
            await stream.aclose()
            raise KuboxError(f"{about}: the agent did not start the watch: {first}")
        return AsyncFileWatch(stream, path)
