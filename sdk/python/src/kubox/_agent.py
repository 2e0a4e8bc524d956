"""The data side of the SDK: kubox-agent's API (the Connect protocol with binary protobuf
messages, generated from proto/ into kubox._proto, as the Go SDK sends them; file contents under
/files/) through kubox-router or straight to the sandbox, with httpx (asyncio)."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any, AsyncGenerator, Awaitable, Callable, Dict, Generic, List, Optional, Tuple, Type, TypeVar
from urllib.parse import quote

import httpx
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message

from .errors import KuboxError, SandboxConnectionError, SandboxTimeoutError, connect_error, error_from_body

#: Returns where the sandbox's agent answers now: its base URL and the headers (credentials).
Resolve = Callable[[], Awaitable[Tuple[str, Dict[str, str]]]]

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)

#: Seconds a 503 of a sandbox the SDK saw Ready is tried again (the router's cache catching up).
NOT_READY_GRACE = 3.0
_END_STREAM = 0x02
_COMPRESSED = 0x01
_UNARY_HEADERS = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1"}
_STREAM_HEADERS = {"Content-Type": "application/connect+proto", "Connect-Protocol-Version": "1"}


class Method(Generic[Req, Resp]):
    """One method of kubox-agent's API: its URL path and its message types, checked against the
    service's descriptor (generated from proto/) when the SDK is imported."""

    def __init__(self, service: ServiceDescriptor, name: str, request: Type[Req], response: Type[Resp],
                 *, streams: bool = False) -> None:
        m = service.methods_by_name[name]
        if (m.input_type.full_name, m.output_type.full_name) != (request.DESCRIPTOR.full_name,
                                                                 response.DESCRIPTOR.full_name):
            raise TypeError(f"{service.full_name}.{name} takes {m.input_type.full_name} and returns "
                            f"{m.output_type.full_name}, not {request.DESCRIPTOR.full_name} and "
                            f"{response.DESCRIPTOR.full_name}")
        if getattr(m, "server_streaming", streams) != streams:
            raise TypeError(f"{service.full_name}.{name} is {'not ' if streams else ''}a server stream")
        #: The URL path, ``/kubox.agent.v1.ProcessService/RunProcess``.
        self.path = f"/{service.full_name}/{name}"
        self.request = request
        self.response = response


def envelope(msg: Message) -> bytes:
    """A Connect streaming request: one uncompressed message in its 5-byte envelope."""
    body = msg.SerializeToString()
    return struct.pack(">BI", 0, len(body)) + body


class EnvelopeReader:
    """Splits a Connect stream's bytes into its messages: (flags, bytes) pairs; the end-of-stream
    message (flags 0x02) is JSON, the others are the method's protobuf messages."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> List[Tuple[int, bytes]]:
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
            out.append((flags, data))
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

    async def call(self, method: "Method[Req, Resp]", msg: Req, *, about: str = "",
                   timeout: Optional[float] = None) -> Resp:
        """Calls a unary method and returns its answer."""
        about = about or self.object
        resp = await self._send("POST", method.path, about, content=msg.SerializeToString(), headers=_UNARY_HEADERS,
                                timeout=timeout)
        if resp.status_code != 200:
            raise error_from_body(resp.status_code, resp.content, about)
        return _decode(method.response, resp.content, about)

    async def stream(self, method: "Method[Req, Resp]", msg: Req, *, about: str = "") -> AsyncGenerator[Resp, None]:
        """Calls a server-streaming method and yields its messages; an error ending the stream
        raises the SDK's exception. Broken connections raise :class:`SandboxConnectionError`."""
        about = about or self.object
        resp = await self._send("POST", method.path, about, content=envelope(msg), stream=True,
                                headers=_STREAM_HEADERS)
        try:
            if resp.status_code != 200:
                await resp.aread()
                raise error_from_body(resp.status_code, resp.content, about)
            reader = EnvelopeReader()
            try:
                async for chunk in resp.aiter_raw():
                    for flags, data in reader.feed(chunk):
                        if flags & _END_STREAM:
                            end = _end_of_stream(data, about)
                            if end.get("error"):
                                raise connect_error(end["error"], about)
                            return
                        yield _decode(method.response, data, about)
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


def _decode(cls: Type[Resp], data: bytes, about: str) -> Resp:
    """The message of type ``cls`` in ``data``."""
    try:
        return cls.FromString(data)
    except DecodeError as e:
        raise KuboxError(f"{about}: the agent's answer is not a {cls.DESCRIPTOR.full_name}: {e}; are the SDK "
                         "and kubox-agent of compatible versions?") from e


def _end_of_stream(data: bytes, about: str) -> Dict[str, Any]:
    """The JSON end-of-stream message of a Connect stream (``{"error": ..., "metadata": ...}``)."""
    try:
        end = json.loads(data) if data else {}
    except ValueError as e:
        raise KuboxError(f"{about}: the agent's end-of-stream message is not JSON: {data[:200]!r}") from e
    return end if isinstance(end, dict) else {}


def _timeout(seconds: Optional[float]) -> httpx.Timeout:
    """Connecting takes at most 10 s; reading waits ``seconds``, or for ever (a process runs as
    long as it runs)."""
    return httpx.Timeout(connect=10.0, read=seconds, write=60.0, pool=None)


def _transport_error(e: httpx.HTTPError, about: str, base: str) -> KuboxError:
    if isinstance(e, httpx.TimeoutException):
        return SandboxTimeoutError(f"{about}: no answer from {base} in time: {e!r}")
    return SandboxConnectionError(f"{about}: cannot reach {base}: {e!r}; is the router (or the sandbox) reachable "
                                  "from here?")
