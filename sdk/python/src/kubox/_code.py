"""The sandbox's code interpreter: E2B's code-interpreter wire, which kubox-agent serves on port
49999 (POST /execute answering NDJSON; /contexts to create, list, restart and remove contexts).
Through the router, requests name the port with ``X-Sandbox-Port`` and the router adds the
sandbox's agent token; directly, they go to the Pod IP's port 49999 with the agent token."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

import httpx

from ._agent import Agent
from .errors import KuboxError, SandboxConnectionError, SandboxTimeoutError, error_from_body
from .types import CodeContext, CodeResult, Execution, ExecutionError

#: The code interpreter's port in every sandbox (api/contract E2BCodeInterpreterPort).
CODE_INTERPRETER_PORT = 49999
#: The router's header naming a sandbox's port (api/contract SandboxPortHeader).
SANDBOX_PORT_HEADER = "X-Sandbox-Port"

#: What run_code keeps of an execution, so that code printing without end cannot exhaust the
#: caller's memory (the Go SDK's DefaultCodeOutputBytes and DefaultCodeResultBytes): the first
#: 1 MiB of stdout and of stderr each, in UTF-8 (as much as the agent keeps of a command's output
#: by default), and results while their total, as the wire sends them (images in base64), stays
#: within 32 MiB, the one result the code interpreter sends at most. A result that does not fit
#: is dropped whole. ``Execution.stdout_truncated``, ``stderr_truncated`` and
#: ``results_truncated`` say what was not kept; the callbacks still get everything.
DEFAULT_CODE_OUTPUT_BYTES = 1 << 20
DEFAULT_CODE_RESULT_BYTES = 32 << 20

TextCallback = Callable[[str], Any]
ResultCallback = Callable[[CodeResult], Any]
Resolve = Callable[[], Awaitable[Tuple[str, Dict[str, str]]]]


def code_resolver(resolve: Resolve, direct: Callable[[], bool]) -> Resolve:
    """The resolver of the code interpreter from the agent's: the same base with X-Sandbox-Port
    through the router, the Pod IP's port 49999 directly."""
    async def code() -> Tuple[str, Dict[str, str]]:
        base, auth = await resolve()
        if direct():
            return str(httpx.URL(base).copy_with(port=CODE_INTERPRETER_PORT)).rstrip("/"), auth
        return base, {**auth, SANDBOX_PORT_HEADER: str(CODE_INTERPRETER_PORT)}
    return code


def _result(m: Dict[str, Any]) -> CodeResult:
    js = m.get("json")
    return CodeResult(text=m.get("text"), html=m.get("html"), markdown=m.get("markdown"), svg=m.get("svg"),
                      png=m.get("png"), jpeg=m.get("jpeg"), pdf=m.get("pdf"), latex=m.get("latex"),
                      json=js, javascript=m.get("javascript"), is_main_result=bool(m.get("is_main_result")))


async def run_code(agent: Agent, code: str, *, language: Optional[str], context: Optional[CodeContext],
                   envs: Optional[Mapping[str, str]], timeout: Optional[float],
                   on_stdout: Optional[TextCallback], on_stderr: Optional[TextCallback],
                   on_result: Optional[ResultCallback]) -> Execution:
    """POST /execute, read as it streams."""
    about = f"code interpreter of {agent.object}"
    if context is not None and language:
        raise KuboxError(f"run_code in {agent.object}: give context or language, not both (a context has its own language)")
    body: Dict[str, Any] = {"code": code}
    if context is not None:
        body["context_id"] = context.id
    elif language:
        body["language"] = language
    if envs:
        body["env_vars"] = dict(envs)
    resp = await agent._send("POST", "/execute", about, content=json.dumps(body).encode(), stream=True,
                             headers={"Content-Type": "application/json"}, timeout=timeout)
    try:
        if resp.status_code >= 400:
            await resp.aread()
            raise error_from_body(resp.status_code, resp.content, about)
        ex = Execution()
        kept = _Kept()
        try:
            async for line in resp.aiter_lines():
                if line.strip() and _message(ex, kept, line, on_stdout, on_stderr, on_result):
                    return ex
        except httpx.TimeoutException as e:
            raise SandboxTimeoutError(f"run_code in {agent.object} did not end within its timeout ({timeout} s): the code "
                                      "interpreter interrupted it and the context keeps its state; raise timeout") from e
        except httpx.HTTPError as e:
            raise SandboxConnectionError(f"{about}: the answer broke off: {e!r}") from e
        raise SandboxConnectionError(f"{about}: the answer ended before end_of_execution")
    finally:
        await resp.aclose()


class _Kept:
    """The bytes of an Execution's logs and results so far."""

    def __init__(self) -> None:
        self.stdout = self.stderr = self.results = 0


def _keep_text(pieces: List[str], text: str, kept: int) -> Tuple[int, bool]:
    """Appends what fits of text to pieces within DEFAULT_CODE_OUTPUT_BYTES (kept bytes so far),
    cut at a character; the new count, and whether text was cut."""
    b = text.encode("utf-8", "surrogatepass")
    room = DEFAULT_CODE_OUTPUT_BYTES - kept
    cut = len(b) > room
    if cut:
        text = b[:room].decode("utf-8", "ignore")
        b = text.encode("utf-8", "surrogatepass")
    if text:
        pieces.append(text)
    return kept + len(b), cut


def _message(ex: Execution, kept: _Kept, line: str, on_stdout: Optional[TextCallback],
             on_stderr: Optional[TextCallback], on_result: Optional[ResultCallback]) -> bool:
    """Adds one message (a line of the answer) to ex, within the bounds; True at end_of_execution."""
    m = json.loads(line)
    t = m.get("type")
    if t == "stdout":
        kept.stdout, cut = _keep_text(ex.logs.stdout, m.get("text", ""), kept.stdout)
        ex.stdout_truncated = ex.stdout_truncated or cut
        if on_stdout:
            on_stdout(m.get("text", ""))
    elif t == "stderr":
        kept.stderr, cut = _keep_text(ex.logs.stderr, m.get("text", ""), kept.stderr)
        ex.stderr_truncated = ex.stderr_truncated or cut
        if on_stderr:
            on_stderr(m.get("text", ""))
    elif t == "result":
        r = _result(m)
        size = len(line.encode("utf-8", "surrogatepass"))
        if kept.results + size <= DEFAULT_CODE_RESULT_BYTES:
            kept.results += size
            ex.results.append(r)
        else:
            ex.results_truncated = True
        if on_result:
            on_result(r)
    elif t == "error":
        ex.error = ExecutionError(name=m.get("name") or "", value=m.get("value") or "", traceback=m.get("traceback") or "")
    elif t == "number_of_executions":
        ex.execution_count = int(m.get("execution_count") or 0)
    return t == "end_of_execution"


async def contexts_call(agent: Agent, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
    """A call of /contexts; the answer's JSON (None when it has none)."""
    about = f"code interpreter of {agent.object}"
    content = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    resp = await agent._send(method, path, about, content=content, headers=headers)
    if resp.status_code >= 400:
        raise error_from_body(resp.status_code, resp.content, about)
    return resp.json() if resp.content.strip() else None


def context_of(doc: Dict[str, Any]) -> CodeContext:
    return CodeContext(id=doc.get("id", ""), language=doc.get("language", ""), cwd=doc.get("cwd", ""))


def context_path(c: CodeContext, suffix: str = "") -> str:
    return "/contexts/" + quote(c.id, safe="") + suffix


def contexts_of(docs: List[Dict[str, Any]]) -> List[CodeContext]:
    return [context_of(d) for d in docs or []]
