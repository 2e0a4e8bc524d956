"""The data side of the SDK: kubox-agent's API (Connect protocol with JSON, and file contents
under /files/) through kubox-router or straight to the sandbox, with httpx (asyncio)."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any, AsyncGenerator, Awaitable, Callable, Dict, Optional, Tuple
from urllib.parse import quote

import httpx

from .errors import KuboxError, SandboxConnectionError, SandboxTimeoutError, connect_error, error_from_body

Msg = Dict[str, Any]

#: Returns where the sandbox's agent answers now: its base URL and the headers (credentials).
Resolve = Callable[[], Awaitable[Tuple[str, Dict[str, str]]]]

_PACKAGE = "kubox.agent.v1."
#: Seconds a 503 of a sandbox the SDK saw Ready is tried again (the router's cache catching up).
NOT_READY_GRACE = 3.0
_END_STREAM = 0x02
_COMPRESSED = 0x01


def envelope(msg: Msg) -> bytes:
    """A Connect streaming request: one uncompressed message in its 5-byte envelope."""
    body = json.dumps(msg).encode()
    return struct.pack(">BI", 0, len(body)) + body


class EnvelopeReader:
    """Splits a Connect stream's bytes into its messages."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> list:
        """Adds bytes; returns the (flags, message) pairs now complete."""
        self._buf += chunk
        out = []
        while len(self._buf) >= 5:
            flags, n = struct.unpack(">BI", self._buf[:5])
            if len(self._buf) < 5 + n:
                break
            data = bytes(self._buf[5:5 + n])
            del self._buf[:5 + n]
            if flags & _COMPRESSED:
                raise KuboxError("the agent sent a compressed message that was not asked for")
            out.append((flags, json.loads(data) if data else {}))
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message."""
        return len(self._buf)


def content_path(path: str) -> str:
    """The URL path of a file's contents under the agent's /files/."""
    return "/files/" + "/".join(quote(seg, safe="") for seg in path.lstrip("/").split("/"))


class Agent:
    """kubox-agent's API for one sandbox: unary calls, server streams and file contents.

    ``retry_not_ready`` says whether a 503 (not ready) should be tried again for a moment: true
    when the SDK has just seen the sandbox Ready, and the router's cache of it may lag by a few
    milliseconds (right after a claim or a resume)."""

    def __init__(self, http: httpx.AsyncClient, resolve: Resolve, obj: str,
                 retry_not_ready: Callable[[], bool] = lambda: False) -> None:
        self._http = http
        self._resolve = resolve
        self._retry_not_ready = retry_not_ready
        #: The sandbox, for error messages (``sandbox ns/name``).
        self.object = obj

    async def _send(self, method: str, path: str, about: str, *, headers: Dict[str, str], content: Any = None,
                    params: Optional[Dict[str, str]] = None, stream: bool = False,
                    timeout: Optional[float] = None) -> httpx.Response:
        """Sends a request to the agent and returns its answer, whatever its status. A 503 of a
        sandbox the SDK saw Ready is sent again, with backoff, for up to NOT_READY_GRACE seconds,
        when the body can be sent again."""
        replayable = content is None or isinstance(content, bytes)
        delay, deadline = 0.02, None
        while True:
            base, auth = await self._resolve()
            req = self._http.build_request(method, base + path, params=params, content=content,
                                           headers={**auth, **headers}, timeout=_timeout(timeout))
            try:
                resp = await self._http.send(req, stream=stream)
            except httpx.HTTPError as e:
                raise _transport_error(e, about, base) from e
            if resp.status_code != 503 or not replayable or not self._retry_not_ready():
                return resp
            now = asyncio.get_running_loop().time()
            deadline = deadline or now + NOT_READY_GRACE
            if now >= deadline:
                return resp
            await resp.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    async def call(self, service: str, method: str, msg: Msg, *, about: str = "",
                   timeout: Optional[float] = None) -> Msg:
        """Calls a unary method (``ProcessService``, ``RunProcess``) and returns its answer."""
        about = about or self.object
        resp = await self._send("POST", f"/{_PACKAGE}{service}/{method}", about, content=json.dumps(msg).encode(),
                                headers={"Content-Type": "application/json", "Connect-Protocol-Version": "1"},
                                timeout=timeout)
        if resp.status_code != 200:
            raise error_from_body(resp.status_code, resp.content, about)
        return resp.json()

    async def stream(self, service: str, method: str, msg: Msg, *, about: str = "") -> AsyncGenerator[Msg, None]:
        """Calls a server-streaming method and yields its messages; an error ending the stream
        raises the SDK's exception. Broken connections raise :class:`SandboxConnectionError`."""
        about = about or self.object
        resp = await self._send("POST", f"/{_PACKAGE}{service}/{method}", about, content=envelope(msg), stream=True,
                                headers={"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
        try:
            if resp.status_code != 200:
                await resp.aread()
                raise error_from_body(resp.status_code, resp.content, about)
            reader = EnvelopeReader()
            try:
                async for chunk in resp.aiter_raw():
                    for flags, m in reader.feed(chunk):
                        if flags & _END_STREAM:
                            if m.get("error"):
                                raise connect_error(m["error"], about)
                            return
                        yield m
            except httpx.HTTPError as e:
                raise _transport_error(e, about, str(resp.url)) from e
            raise SandboxConnectionError(f"{about}: the stream ended without its end message "
                                         f"({reader.pending} bytes pending): the connection to {resp.url} broke")
        finally:
            await resp.aclose()

    async def content(self, method: str, path: str, *, about: str, params: Optional[Dict[str, str]] = None,
                      body: Any = None, stream: bool = False) -> httpx.Response:
        """Sends a request for a file's contents and returns the answer of a success (streamed
        when ``stream``: the caller closes it)."""
        headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
        resp = await self._send(method, content_path(path), about, params=params, content=body, headers=headers,
                                stream=stream)
        if resp.status_code >= 400:
            await resp.aread()
            await resp.aclose()
            raise error_from_body(resp.status_code, resp.content, about)
        return resp


def _timeout(seconds: Optional[float]) -> httpx.Timeout:
    """Connecting takes at most 10 s; reading waits ``seconds``, or for ever (a process runs as
    long as it runs)."""
    return httpx.Timeout(connect=10.0, read=seconds, write=60.0, pool=None)


def _transport_error(e: httpx.HTTPError, about: str, base: str) -> KuboxError:
    if isinstance(e, httpx.TimeoutException):
        return SandboxTimeoutError(f"{about}: no answer from {base} in time: {e!r}")
    return SandboxConnectionError(f"{about}: cannot reach {base}: {e!r}; is the router (or the sandbox) reachable "
                                  "from here?")
