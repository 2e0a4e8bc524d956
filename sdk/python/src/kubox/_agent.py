"""The data side of the SDK: kubox-agent's API (Connect protocol with JSON, and file contents
under /files/) through kubox-router or straight to the sandbox, with httpx (asyncio)."""

from __future__ import annotations

import json
import struct
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional, Tuple
from urllib.parse import quote

import httpx

from .errors import KuboxError, SandboxConnectionError, SandboxTimeoutError, connect_error, error_from_body

Msg = Dict[str, Any]

#: Returns where the sandbox's agent answers now: its base URL and the headers (credentials).
Resolve = Callable[[], Awaitable[Tuple[str, Dict[str, str]]]]

_PACKAGE = "kubox.agent.v1."
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
    """kubox-agent's API for one sandbox: unary calls, server streams and file contents."""

    def __init__(self, http: httpx.AsyncClient, resolve: Resolve, obj: str) -> None:
        self._http = http
        self._resolve = resolve
        #: The sandbox, for error messages (``sandbox ns/name``).
        self.object = obj

    async def call(self, service: str, method: str, msg: Msg, *, about: str = "",
                   timeout: Optional[float] = None) -> Msg:
        """Calls a unary method (``ProcessService``, ``RunProcess``) and returns its answer."""
        about = about or self.object
        base, headers = await self._resolve()
        headers = {**headers, "Content-Type": "application/json", "Connect-Protocol-Version": "1"}
        try:
            resp = await self._http.post(f"{base}/{_PACKAGE}{service}/{method}", content=json.dumps(msg).encode(),
                                         headers=headers, timeout=_timeout(timeout))
        except httpx.HTTPError as e:
            raise _transport_error(e, about, base) from e
        if resp.status_code != 200:
            raise error_from_body(resp.status_code, resp.content, about)
        return resp.json()

    async def stream(self, service: str, method: str, msg: Msg, *, about: str = "") -> AsyncIterator[Msg]:
        """Calls a server-streaming method and yields its messages; an error ending the stream
        raises the SDK's exception. Broken connections raise :class:`SandboxConnectionError`."""
        about = about or self.object
        base, headers = await self._resolve()
        headers = {**headers, "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
        req = self._http.build_request("POST", f"{base}/{_PACKAGE}{service}/{method}", content=envelope(msg),
                                       headers=headers, timeout=_timeout(None))
        try:
            resp = await self._http.send(req, stream=True)
        except httpx.HTTPError as e:
            raise _transport_error(e, about, base) from e
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
                raise _transport_error(e, about, base) from e
            raise SandboxConnectionError(f"{about}: the stream ended without its end message "
                                         f"({reader.pending} bytes pending): the connection to {base} broke")
        finally:
            await resp.aclose()

    async def content(self, method: str, path: str, *, about: str, params: Optional[Dict[str, str]] = None,
                      body: Any = None, stream: bool = False) -> httpx.Response:
        """Sends a request for a file's contents and returns the answer of a success (streamed
        when ``stream``: the caller closes it)."""
        base, headers = await self._resolve()
        if body is not None:
            headers = {**headers, "Content-Type": "application/octet-stream"}
        req = self._http.build_request(method, base + content_path(path), params=params, content=body,
                                       headers=headers, timeout=_timeout(None))
        try:
            resp = await self._http.send(req, stream=stream)
        except httpx.HTTPError as e:
            raise _transport_error(e, about, base) from e
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
