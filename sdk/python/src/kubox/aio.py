"""The asyncio client: :class:`AsyncSandbox` (and :class:`AsyncClient` for shared settings).

It has the surface of the synchronous :class:`kubox.Sandbox`, with ``await``::

    async with AsyncSandbox.claim(pool="python") as sb:
        result = await sb.run("python3 -c 'print(1)'")
"""

from __future__ import annotations

import asyncio
import base64
import datetime as _dt
import os
from dataclasses import dataclass
from typing import (Any, Awaitable, Callable, Coroutine, Dict, Generator, List, Mapping, Optional, Sequence, Tuple,
                    Union)
from urllib.parse import quote

import httpx

from . import _claims, _kubeconfig
from ._agent import Agent
from ._claims import Obj, SnapshotRef
from . import _code
from ._files import AsyncFiles
from ._kube import CLAIMS, SANDBOXES, SECRETS, SNAPSHOTS, Kube
from ._process import (LIST, RUN, AsyncProcess, Command, OutputCallback, Seconds, Stdin, process_spec, result_of,
                       seconds, start_process)
from ._proto.kubox.agent.v1.process_pb2 import ListProcessesRequest, RunProcessRequest
from .errors import (ClaimFailedError, CommandError, ConfigError, ForbiddenError, KuboxError, MemoryNotKeptError,
                     NotFoundError, SandboxNotReadyError, SandboxTimeoutError, SnapshotFailedError, UnauthorizedError,
                     error_from_body)
from .types import CodeContext, CodeResult, CommandResult, Execution

__all__ = ["AsyncClient", "AsyncSandbox", "AsyncProcess", "AsyncFiles", "AsyncKeepAlive", "ClaimToken", "Opening"]

#: Environment variable with kubox-router's URL.
ROUTER_URL_ENV = "KUBOX_ROUTER_URL"
DEFAULT_ROUTER_NAMESPACE = "kubox-system"
DEFAULT_ROUTER_SERVICE = "sandbox-router-svc"
DEFAULT_ROUTER_PORT = 8080
DEFAULT_READY_TIMEOUT = 180.0
#: Seconds ``run`` waits for the agent's answer beyond the command's ``timeout`` before it gives
#: up on the connection (SandboxTimeoutError).
RUN_ANSWER_GRACE = 30.0
#: Seconds between the calls of :meth:`AsyncSandbox.keep_alive` by default: well below the idle
#: policy's shortest suspendAfter (30 s).
DEFAULT_KEEP_ALIVE_INTERVAL = 10.0
#: Seconds a keep-alive call may wait for its answer: longer than the router takes to wake a
#: suspended sandbox or give up (504), so a wake is not cut short and tried again.
KEEP_ALIVE_CALL_TIMEOUT = 120.0
#: Connection modes: how processes and files reach a sandbox's agent.
CONNECTIONS = ("auto", "router", "direct", "port-forward")

#: Called with every version of a claim that a wait sees.
ProgressCallback = Callable[[Obj], Any]

_NO_BEARER = ("kubox-router authenticates bearer tokens, and this kubeconfig has none (it authenticates with a "
              "client certificate, or not at all): pass token=... with a token the router accepts — a Kubernetes "
              "service account token (`kubectl create token <service-account>`), a claim token "
              "(Client.mint_claim_token, `kubox token`) or the router's shared token — or use a kubeconfig with a "
              "token or an exec plugin")


@dataclass(frozen=True)
class ClaimToken:
    """A token that opens one claim's sandbox through kubox-router, and nothing else."""

    #: The bearer token (``kbx1.…``).
    token: str
    #: When it stops working (UTC).
    expires_at: Optional[_dt.datetime]


class AsyncClient:
    """Settings shared by sandboxes: the cluster (kubeconfig), the namespace, and how processes
    and files reach the sandboxes' agents.

    ``connection`` is one of:

    - ``"auto"`` (default): the router at ``router_url``, else ``$KUBOX_ROUTER_URL``, else the
      URL in the kubeconfig's ``kubox.dev/router`` cluster extension (``make dev`` writes it);
      inside a Pod, the router's Service; elsewhere a port-forward to the router.
    - ``"router"``: kubox-router at ``router_url`` (required, or from the environment/kubeconfig).
    - ``"port-forward"``: a port-forward (through the API server) to a ready router Pod.
    - ``"direct"``: the sandbox's Pod IP and its agent token from the Secret
      ``<sandbox>-kubox-agent`` (needs routable Pod IPs and ``get secrets``).

    The router needs a bearer token: ``token`` (a claim token, a service account token, or the
    router's shared token), else the kubeconfig's.
    """

    def __init__(self, *, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                 namespace: Optional[str] = None, connection: str = "auto", router_url: Optional[str] = None,
                 router_namespace: str = DEFAULT_ROUTER_NAMESPACE, router_service: str = DEFAULT_ROUTER_SERVICE,
                 token: Optional[str] = None, ready_timeout: Seconds = DEFAULT_READY_TIMEOUT) -> None:
        if connection not in CONNECTIONS:
            raise ConfigError(f"unknown connection {connection!r}: use one of {', '.join(CONNECTIONS)}")
        self._settings = _kubeconfig.load(kubeconfig, context)
        #: The namespace of claims and sandboxes: ``namespace``, else the kubeconfig context's
        #: (or the Pod's), else ``default``.
        self.namespace: str = namespace or self._settings.namespace or "default"
        #: Seconds a claim, connect, open, suspend or resume waits.
        self.ready_timeout: float = seconds(ready_timeout, "ready_timeout") or DEFAULT_READY_TIMEOUT
        self.router_namespace, self.router_service = router_namespace, router_service
        #: The connection mode in use (``auto`` resolved).
        self.connection, self.router_url = self._resolve_connection(connection, router_url)
        self._token = token
        self._kube = Kube(self._settings)
        self._http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=16))
        self._forward: Any = None
        self._forward_lock = asyncio.Lock()

    def _resolve_connection(self, connection: str, router_url: Optional[str]) -> Tuple[str, str]:
        url = router_url or ""
        if connection in ("auto", "router") and not url:
            url = os.environ.get(ROUTER_URL_ENV, "") or self._settings.router_url
        url = url.rstrip("/")
        if connection == "auto":
            if url:
                return "router", url
            if _kubeconfig.in_pod():
                return "router", f"http://{self.router_service}.{self.router_namespace}.svc:{DEFAULT_ROUTER_PORT}"
            return "port-forward", ""
        if connection == "router" and not url:
            raise ConfigError("connection=\"router\" needs router_url (or $KUBOX_ROUTER_URL): kubox-router's URL, "
                              "e.g. http://127.0.0.1:18080 after "
                              "`kubectl -n kubox-system port-forward svc/sandbox-router-svc 18080:8080`")
        return connection, url

    def __repr__(self) -> str:
        return f"<AsyncClient {self._settings.host} namespace={self.namespace} connection={self.connection}>"

    async def aclose(self) -> None:
        """Closes the client's connections and stops its port-forward."""
        if self._forward is not None:
            await asyncio.to_thread(self._forward.stop)
            self._forward = None
        await self._http.aclose()
        await self._kube.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # --- claims ---------------------------------------------------------------------------

    async def create_claim(self, pool: Optional[str] = None, template: Optional[str] = None, *,
                           namespace: Optional[str] = None, ttl: Optional[Seconds] = None,
                           env: Optional[Mapping[str, str]] = None, labels: Optional[Mapping[str, str]] = None,
                           pod_labels: Optional[Mapping[str, str]] = None,
                           pod_annotations: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
                           suspend_after: Optional[Seconds] = None,
                           idle_policy: Optional[Mapping[str, str]] = None,
                           allow_domains: Optional[Sequence[str]] = None, deny_domains: Optional[Sequence[str]] = None,
                           deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> Obj:
        """Creates the SandboxClaim :meth:`claim` would create and returns it at once, without
        waiting and without ever deleting it (:meth:`connect` waits for it later)."""
        ns = namespace or self.namespace
        body = _claims.build_claim(namespace=ns, pool=pool, template=template, name=name, ttl=seconds(ttl, "ttl"),
                                   env=env, labels=labels, pod_labels=pod_labels, pod_annotations=pod_annotations,
                                   suspend_after=seconds(suspend_after, "suspend_after"), idle_policy=idle_policy,
                                   allow_domains=allow_domains, deny_domains=deny_domains, deny_cidrs=deny_cidrs, snapshot=snapshot)
        return await self._kube.create(CLAIMS, ns, body)

    async def claim(self, pool: Optional[str] = None, template: Optional[str] = None, *,
                    namespace: Optional[str] = None, ttl: Optional[Seconds] = None,
                    env: Optional[Mapping[str, str]] = None, labels: Optional[Mapping[str, str]] = None,
                    pod_labels: Optional[Mapping[str, str]] = None, pod_annotations: Optional[Mapping[str, str]] = None,
                    name: Optional[str] = None, on_progress: Optional[ProgressCallback] = None,
                    suspend_after: Optional[Seconds] = None,
                    idle_policy: Optional[Mapping[str, str]] = None,
                    allow_domains: Optional[Sequence[str]] = None, deny_domains: Optional[Sequence[str]] = None,
                    deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> "AsyncSandbox":
        """Claims a sandbox from the SandboxWarmPool ``pool`` or, without a pool, a new one from
        the SandboxTemplate ``template``, and waits until it is Ready (one watch, no polling).

        ``ttl`` (seconds or a timedelta) makes the claim and its sandbox expire even if this
        program dies; ``env`` sets environment variables (the template must allow them);
        ``labels`` label the claim; ``pod_labels``/``pod_annotations`` go on the Pod; ``name``
        names the claim (default: generated, ``kubox-xxxxx``). ``on_progress`` sees every version
        of the claim while waiting.

        ``suspend_after`` (seconds or a timedelta, 30 s to 8760 h) sets the claim's idle policy:
        the sandbox is suspended after that long without activity (requests through kubox-router,
        processes other than its main command) and the next request through the router wakes it.
        ``idle_policy`` gives the whole policy in the API's spelling, e.g.
        ``{"runningProcesses": "Ignore", "wake": "Manual"}`` (``suspend_after`` sets its
        ``suspendAfter``). :meth:`AsyncSandbox.keep_alive` holds the sandbox awake meanwhile.

        ``allow_domains``, ``deny_domains`` and ``deny_cidrs`` set the claim's spec.egress, which
        narrows its template's egress: the sandbox may reach only the allowed names (exact, or
        ``*.`` wildcards) among those the template allows, and never the denied names or address
        ranges. A bad name or CIDR raises :class:`ConfigError` before anything is created; a name
        the template does not allow, or egress on a template without it, fails the claim with
        reason ``EgressRejected``.

        ``snapshot`` (a SandboxSnapshot's name, or what :meth:`AsyncSandbox.snapshot` returns)
        starts the sandbox from that snapshot: its processes, memory and files as they were. It
        must be of a sandbox built from the same template; a pool serves such a claim warm only
        when its template starts from that snapshot, otherwise the sandbox starts cold.

        Raises :class:`ClaimFailedError` when the claim fails for good (its pool does not exist,
        ...) and :class:`SandboxTimeoutError` after ``ready_timeout``; the claim is deleted then.
        Closing the sandbox deletes the claim.
        """
        claim = await self.create_claim(pool, template, namespace=namespace, ttl=ttl, env=env, labels=labels,
                                        pod_labels=pod_labels, pod_annotations=pod_annotations, name=name,
                                        suspend_after=suspend_after, idle_policy=idle_policy,
                                        allow_domains=allow_domains, deny_domains=deny_domains, deny_cidrs=deny_cidrs, snapshot=snapshot)
        try:
            sb = await self._wait_claim(claim, on_progress, pool=pool)
        except BaseException as e:
            # The claim is ours and useless now; delete it even when the wait was cancelled.
            m = claim["metadata"]
            try:
                await asyncio.shield(self._kube.delete(CLAIMS, m["namespace"], m["name"]))
            except KuboxError as de:
                if hasattr(e, "add_note"):  # Python 3.11
                    e.add_note(f"and deleting SandboxClaim {m['namespace']}/{m['name']} failed too: {de}")
            raise
        sb._owns_claim = True
        return sb

    async def connect(self, claim: str, *, namespace: Optional[str] = None,
                      on_progress: Optional[ProgressCallback] = None) -> "AsyncSandbox":
        """The sandbox of the existing SandboxClaim ``claim``, once it is Ready. A claim whose
        sandbox is suspended is returned at once, so that it can be resumed. Closing the sandbox
        does not delete the claim."""
        obj = await self._kube.get(CLAIMS, namespace or self.namespace, claim)
        return await self._wait_claim(obj, on_progress)

    async def open(self, sandbox: str, *, namespace: Optional[str] = None) -> "AsyncSandbox":
        """The Sandbox ``sandbox`` (no claim), once it is Ready; a suspended one at once."""
        ns = namespace or self.namespace
        obj = await self._kube.get(SANDBOXES, ns, sandbox)
        if not _claims.is_suspended(obj):
            obj = await self._wait_sandbox(obj, _claims.sandbox_ready)
        return AsyncSandbox(self, obj)

    async def fork_from(self, snapshot: Obj, n: int) -> List["AsyncSandbox"]:
        """Starts ``n`` Sandboxes from the Ready SandboxSnapshot ``snapshot`` (as
        :meth:`AsyncSandbox.snapshot` returns it), each with the spec of the Sandbox it was taken
        of (which must still exist), and returns them once all are Ready. Forks that started stay
        when one fails; the error names the source."""
        if n < 1:
            raise ConfigError(f"fork: n is {n}; want at least 1")
        ns = snapshot["metadata"]["namespace"]
        src = await self._kube.get(SANDBOXES, ns, snapshot["spec"]["sandboxRef"]["name"])

        async def one() -> AsyncSandbox:
            obj = await self._kube.create(SANDBOXES, ns, _claims.fork_of(src, snapshot["metadata"]["name"]))
            return AsyncSandbox(self, await self._wait_sandbox(obj, _claims.sandbox_ready))

        return list(await asyncio.gather(*(one() for _ in range(n))))

    async def _wait_snapshot(self, snap: Obj) -> Obj:
        last = [snap]

        def check(obj: Obj, deleted: bool) -> bool:
            last[0] = obj
            if deleted:
                raise SnapshotFailedError(f"SandboxSnapshot {_claims.name_of(obj)} was deleted while waiting for it")
            return _claims.snapshot_taken(obj)

        return await self._within_timeout(self._kube.watch_until(SNAPSHOTS, snap, check),
                                          "SandboxSnapshot " + _claims.name_of(snap), last, None)

    async def _wait_claim(self, claim: Obj, on_progress: Optional[ProgressCallback],
                          pool: Optional[str] = None) -> "AsyncSandbox":
        last = [claim]

        def check(obj: Obj, deleted: bool) -> bool:
            last[0] = obj
            if deleted:
                m = obj["metadata"]
                raise ClaimFailedError(f"SandboxClaim {m['namespace']}/{m['name']} was deleted while waiting for it "
                                       "to become Ready", namespace=m["namespace"], claim=m["name"], reason="Deleted")
            if on_progress is not None:
                on_progress(obj)
            return _claims.claim_state(obj)

        what = "SandboxClaim " + _claims.name_of(claim)
        ready = await self._within_timeout(self._kube.watch_until(CLAIMS, claim, check), what, last, pool)
        ns = ready["metadata"]["namespace"]
        obj = await self._kube.get(SANDBOXES, ns, _claims.claim_sandbox_name(ready))
        return AsyncSandbox(self, obj, claim=ready["metadata"]["name"])

    async def _wait_sandbox(self, sb: Obj, state: Callable[[Obj], bool]) -> Obj:
        last = [sb]

        def check(obj: Obj, deleted: bool) -> bool:
            last[0] = obj
            if deleted:
                raise SandboxNotReadyError("the Sandbox was deleted while waiting for it (its claim was deleted or "
                                           "it expired)", object="Sandbox " + _claims.name_of(obj), status=404)
            return state(obj)

        return await self._within_timeout(self._kube.watch_until(SANDBOXES, sb, check),
                                          "Sandbox " + _claims.name_of(sb), last, None)

    async def _within_timeout(self, wait: Any, what: str, last: List[Obj], pool: Optional[str]) -> Obj:
        try:
            return await asyncio.wait_for(wait, self.ready_timeout)
        except asyncio.TimeoutError:
            hint = f" (is pool \"{pool}\" filling? `kubectl get sandboxwarmpool {pool}`)" if pool else ""
            raise SandboxTimeoutError(f"{what} is not Ready after {self.ready_timeout:g}s; last "
                                      f"{_claims.condition_text(last[0])}{hint}") from None

    async def mint_claim_token(self, claim: str, *, namespace: Optional[str] = None,
                               ttl: Seconds = 3600) -> ClaimToken:
        """Asks kubox-router for a token that opens the claim's sandbox only (for handing to a
        program that should reach that sandbox and nothing else). Needs create on
        sandboxclaims/connect."""
        ns = namespace or self.namespace
        router, headers = await self._router()
        about = f"claim {ns}/{claim}"
        resp = await self._http.post(f"{router}/v1/claims/{quote(ns, safe='')}/{quote(claim, safe='')}/token",
                                     json={"ttlSeconds": int(seconds(ttl, "ttl") or 0)}, headers=headers)
        if resp.status_code != 200:
            raise error_from_body(resp.status_code, resp.content, about)
        doc = resp.json()
        return ClaimToken(token=doc["token"], expires_at=_claims.parse_time(doc.get("expiresAt")))

    # --- where agents are -----------------------------------------------------------------

    def _bearer(self) -> str:
        token = self._token or self._settings.bearer_token()
        if not token:
            raise UnauthorizedError(401, _NO_BEARER)
        return token

    async def _router(self) -> Tuple[str, Dict[str, str]]:
        """The router's URL (starting the port-forward when that is the mode) and credentials."""
        headers = {"Authorization": "Bearer " + self._bearer()}
        if self.connection == "router":
            return self.router_url, headers
        async with self._forward_lock:
            if self._forward is None or not self._forward.alive():
                from ._portforward import PortForward

                self._forward = await asyncio.to_thread(PortForward.start, self._settings, self.router_namespace,
                                                        self.router_service)
            return self._forward.url, headers

    async def _endpoint(self, sb: "AsyncSandbox") -> Tuple[str, Dict[str, str]]:
        if self.connection != "direct":
            router, headers = await self._router()
            return f"{router}/sandboxes/{quote(sb.namespace, safe='')}/{quote(sb.name, safe='')}", headers
        obj = sb.object
        agent = obj.get("spec", {}).get("agent")
        if agent is None:
            raise ConfigError(f"sandbox {sb} has no spec.agent, so kubox-agent does not run in it: claim it from a "
                              "SandboxTemplate whose spec sets agent: {}")
        ips = obj.get("status", {}).get("podIPs") or []
        if not ips:
            raise SandboxNotReadyError("it has no Pod IP (suspended or starting)", object=f"sandbox {sb}",
                                       hint="resume it or wait for Ready")
        # The port kubox-controller records for the sandbox's current Pod; without it the SDK
        # does not guess one and send the agent token there.
        port = (obj.get("status", {}).get("agent") or {}).get("port")
        if not port:
            raise SandboxNotReadyError("its status does not record the agent's port yet (status.agent)",
                                       object=f"sandbox {sb}", hint="wait for Ready")
        token = await sb._agent_token()
        host = ips[0] if ":" not in ips[0] else f"[{ips[0]}]"
        return f"http://{host}:{port}", {"Authorization": "Bearer " + token}


class AsyncSandbox:
    """A sandbox: run processes, move files, suspend, resume, release.

    Get one with :meth:`claim` (a new claim, deleted on close), :meth:`connect` (an existing
    claim), :meth:`open` (a Sandbox by name) or :meth:`attach` (an agent URL and token, no
    Kubernetes API). Use it as an async context manager to close it at the end of a block.
    """

    def __init__(self, client: Optional[AsyncClient], obj: Obj, *, claim: str = "",
                 endpoint: Optional[Tuple[str, str]] = None, http: Optional[httpx.AsyncClient] = None) -> None:
        self._client = client
        self._obj = obj
        self._owns_claim = False
        self._owns_client = False
        self._closed = False
        self._token: Tuple[str, str] = ("", "")
        self._fixed = endpoint
        #: The sandbox's namespace.
        self.namespace: str = obj["metadata"].get("namespace", "")
        #: The sandbox's name (also its hostname).
        self.name: str = obj["metadata"].get("name", "")
        #: The claim the sandbox was claimed or connected through; "" for :meth:`open`.
        self.claim_name: str = claim
        self._http = http if http is not None else client._http if client is not None else httpx.AsyncClient()
        self._agent = Agent(self._http, self._resolve, f"sandbox {self}", self._seen_ready)
        self._code = Agent(self._http, _code.code_resolver(self._resolve, self._direct), f"sandbox {self}",
                           self._seen_ready)
        #: The sandbox's files.
        self.files = AsyncFiles(self._agent)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __repr__(self) -> str:
        return f"<AsyncSandbox {self} claim={self.claim_name or None}>"

    @property
    def object(self) -> Obj:
        """The Sandbox object as last seen (a dict, as the API server returns it)."""
        return self._obj

    # --- getting one ----------------------------------------------------------------------

    @classmethod
    def claim(cls, pool: Optional[str] = None, template: Optional[str] = None, *,
              client: Optional[AsyncClient] = None, namespace: Optional[str] = None,
              ttl: Optional[Seconds] = None, env: Optional[Mapping[str, str]] = None,
              labels: Optional[Mapping[str, str]] = None, pod_labels: Optional[Mapping[str, str]] = None,
              pod_annotations: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
              on_progress: Optional[ProgressCallback] = None, suspend_after: Optional[Seconds] = None,
              idle_policy: Optional[Mapping[str, str]] = None, allow_domains: Optional[Sequence[str]] = None,
              deny_domains: Optional[Sequence[str]] = None, deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> "Opening":
        """Claims a sandbox (see :meth:`AsyncClient.claim`), with ``client`` or a client of the
        default settings (kubeconfig, ``$KUBOX_ROUTER_URL``) that closes with the sandbox. Await
        it, or use it as ``async with AsyncSandbox.claim(...) as sb:``."""
        return Opening(_with_client(client, lambda c: c.claim(
            pool, template, namespace=namespace, ttl=ttl, env=env, labels=labels, pod_labels=pod_labels,
            pod_annotations=pod_annotations, name=name, on_progress=on_progress, suspend_after=suspend_after,
            idle_policy=idle_policy, allow_domains=allow_domains, deny_domains=deny_domains, deny_cidrs=deny_cidrs, snapshot=snapshot)))

    @classmethod
    def connect(cls, claim: str, *, client: Optional[AsyncClient] = None, namespace: Optional[str] = None,
                on_progress: Optional[ProgressCallback] = None) -> "Opening":
        """The sandbox of the existing claim ``claim`` (see :meth:`AsyncClient.connect`); await
        it or use it with ``async with``."""
        return Opening(_with_client(client, lambda c: c.connect(claim, namespace=namespace, on_progress=on_progress)))

    @classmethod
    def open(cls, sandbox: str, *, client: Optional[AsyncClient] = None,
             namespace: Optional[str] = None) -> "Opening":
        """The Sandbox ``sandbox`` by name, with no claim (see :meth:`AsyncClient.open`); await it
        or use it with ``async with``."""
        return Opening(_with_client(client, lambda c: c.open(sandbox, namespace=namespace)))

    @classmethod
    def attach(cls, url: str, token: str, *, name: str = "") -> "AsyncSandbox":
        """A sandbox's agent API at ``url`` with the bearer ``token``, without the Kubernetes
        API: kubox-router's ``<router>/claims/<ns>/<claim>`` or ``<router>/sandboxes/<ns>/<name>``
        with a claim token, or an agent's own URL with its agent token. Processes and files work;
        suspend and resume need a claimed or opened sandbox."""
        obj = {"metadata": {"name": name or url}}
        return cls(None, obj, endpoint=(url.rstrip("/"), token))

    # --- processes ------------------------------------------------------------------------

    async def run(self, cmd: Command, *, timeout: Optional[Seconds] = None, env: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None, stdin: Union[bytes, str, None] = None, check: bool = False,
                  max_output_bytes: Optional[int] = None) -> CommandResult:
        """Runs a command to completion and returns its exit code and output.

        ``cmd`` is a shell line (``"ls -l | wc -l"``, run by /bin/sh -c) or a list (program and
        arguments, no shell). ``timeout`` (seconds) makes the agent kill the process group once it
        ran that long (``timed_out`` is then True). ``env`` is added to the container's
        environment; ``cwd`` must exist. A non-zero exit is not an error unless ``check``
        (:class:`CommandError`). Output is kept up to ``max_output_bytes`` per stream (the agent's
        default: 1 MiB); ``stdout_truncated`` says when there was more.
        """
        req = RunProcessRequest(spec=process_spec(cmd, env=env, cwd=cwd, timeout=timeout))
        if stdin is not None:
            req.stdin = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
        if max_output_bytes:
            req.max_output_bytes = int(max_output_bytes)
        # With a timeout the agent kills the process then; the answer may take a little longer.
        # Without one, a run lasts as long as the process does.
        limit = seconds(timeout, "timeout")
        res = result_of(await self._agent.call(RUN, req, timeout=limit + RUN_ANSWER_GRACE if limit else None))
        if check and res.exit_code != 0:
            raise CommandError(f"command {cmd!r} in sandbox {self} exited with status {res.exit_code}: "
                               f"{res.stderr.strip()[-500:]}", res)
        return res

    async def start(self, cmd: Command, *, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                    timeout: Optional[Seconds] = None, stdin: Stdin = None,
                    tty: Optional[Tuple[int, int]] = None, on_stdout: Optional[OutputCallback] = None,
                    on_stderr: Optional[OutputCallback] = None) -> AsyncProcess:
        """Starts a command and returns once it runs; its output streams as it is written.

        ``stdin=True`` keeps stdin open for :meth:`AsyncProcess.send_input`; bytes or text are
        written to it and then it is closed; a binary file object or an (async) iterable of bytes
        is copied to it in the background (the process reads it as it arrives), then it is
        closed. ``tty=(rows, cols)`` runs it on a terminal (its
        output then comes as ``"pty"``). ``on_stdout``/``on_stderr`` are called with the text of
        each piece of output as it is read (by iterating the process or by ``wait()``).
        """
        return await start_process(self._agent, cmd, env=env, cwd=cwd, timeout=timeout, stdin=stdin, tty=tty,
                                   on_stdout=on_stdout, on_stderr=on_stderr)

    async def run_code(self, code: str, *, language: Optional[str] = None, context: Optional[CodeContext] = None,
                       envs: Optional[Mapping[str, str]] = None, timeout: Optional[Seconds] = None,
                       on_stdout: Optional[Callable[[str], Any]] = None, on_stderr: Optional[Callable[[str], Any]] = None,
                       on_result: Optional[Callable[[CodeResult], Any]] = None) -> Execution:
        """Runs code in the sandbox's code interpreter and returns its results, output and error.
        State (variables, imports, the working directory) stays in the context for the next call:
        the default context of ``language`` (python, javascript or bash; default python), or
        ``context`` (:meth:`create_code_context`). An exception in the code is
        ``Execution.error``, not raised. ``on_stdout``/``on_stderr`` get output as it is printed,
        all of it; the Execution keeps the first 1 MiB of each stream and up to 32 MiB of results,
        and says when it kept less (``stdout_truncated``, ``stderr_truncated``,
        ``results_truncated``). ``timeout`` (seconds) interrupts the code (the context keeps its state) and raises
        :class:`SandboxTimeoutError`."""
        limit = seconds(timeout, "timeout")
        run = _code.run_code(self._code, code, language=language, context=context, envs=envs, timeout=None,
                             on_stdout=on_stdout, on_stderr=on_stderr, on_result=on_result)
        try:
            return await asyncio.wait_for(run, limit) if limit else await run
        except asyncio.TimeoutError as e:
            raise SandboxTimeoutError(f"run_code in sandbox {self} did not end within its timeout ({limit} s): the code "
                                      "interpreter interrupted it and the context keeps its state; raise timeout") from e

    async def create_code_context(self, *, language: Optional[str] = None, cwd: Optional[str] = None) -> CodeContext:
        """Starts a new context of the code interpreter: an interpreter of its own (default python,
        in the agent's working directory)."""
        body = {k: v for k, v in (("language", language), ("cwd", cwd)) if v}
        return _code.context_of(await _code.contexts_call(self._code, "POST", "/contexts", body))

    async def list_code_contexts(self) -> List[CodeContext]:
        """The code interpreter's contexts, the default ones used so far among them."""
        return _code.contexts_of(await _code.contexts_call(self._code, "GET", "/contexts"))

    async def restart_code_context(self, context: CodeContext) -> None:
        """Stops the context's interpreter; the next run_code in it starts a new one, with none of
        the old state."""
        await _code.contexts_call(self._code, "POST", _code.context_path(context, "/restart"))

    async def remove_code_context(self, context: CodeContext) -> None:
        """Stops the context's interpreter and removes the context."""
        await _code.contexts_call(self._code, "DELETE", _code.context_path(context))

    def keep_alive(self, interval: Seconds = DEFAULT_KEEP_ALIVE_INTERVAL) -> "AsyncKeepAlive":
        """Holds a sandbox with an idle policy awake while the program works without sending it
        requests::

            async with sb.keep_alive(interval=60):
                await think_for_a_while()

        Inside the block a background task calls the agent's cheap ListProcesses at once and every
        ``interval`` seconds (keep it below half of the policy's suspendAfter). Each call is a
        request through kubox-router and to kubox-agent, which both count it as activity; like any
        request through the router, it wakes the sandbox if it was suspended. Failed calls are
        tried again at the next tick, except when the sandbox is gone or the credentials are
        refused: the task stops and leaving the block raises that error."""
        return AsyncKeepAlive(self._agent, seconds(interval, "interval") or DEFAULT_KEEP_ALIVE_INTERVAL)

    # --- lifecycle ------------------------------------------------------------------------

    async def suspend(self, keep_memory: bool = False) -> None:
        """Suspends the sandbox (spec.operatingMode=Suspended) and waits until its Pod is gone.
        Volumes, the claim and the Service stay; :meth:`resume` brings it back.

        With ``keep_memory`` (gVisor sandboxes; spec.suspendPolicy.keepMemory) its memory is kept
        too: its processes, their memory and open files continue after :meth:`resume`. When the
        memory could not be kept the sandbox is suspended without it and :class:`MemoryNotKeptError`
        says why."""
        spec: Obj = {"suspendPolicy": {"keepMemory": True}} if keep_memory else {}
        await self._set_mode("Suspended", _claims.sandbox_suspended, spec)
        if keep_memory:
            kept = _claims.current_condition(self._obj, "MemoryKept")
            if kept is None or kept.get("status") != "True" or not self._obj.get("status", {}).get("memory"):
                why = kept.get("message", "") if kept else "the controller did not say why"
                raise MemoryNotKeptError(f"sandbox {self} is suspended without its memory: {why}")

    async def resume(self) -> None:
        """Resumes a suspended sandbox and waits until it is Ready (a new Pod, a new IP)."""
        await self._set_mode("Running", _claims.sandbox_ready)

    async def snapshot(self, *, filesystem_only: bool = False) -> Obj:
        """Snapshots the running sandbox — its processes, their memory, open files and root
        filesystem writes — without stopping it (gVisor and kubox-node): creates a SandboxSnapshot
        and returns it (a dict) once it is Ready. :meth:`fork`, :meth:`AsyncClient.fork_from`,
        ``claim(..., snapshot=...)`` and a SandboxTemplate's ``snapshotRef`` start sandboxes from
        it. With ``filesystem_only`` it saves the files only (root filesystem writes and emptyDir
        volumes): sandboxes started from it run their processes afresh on those files.
        :class:`SnapshotFailedError` says why it could not be taken."""
        client = self._kube_client("snapshot")
        snap = await client._kube.create(SNAPSHOTS, self.namespace,
                                         _claims.snapshot_of(self.name, self.namespace, filesystem_only=filesystem_only))
        return await client._wait_snapshot(snap)

    async def fork(self, n: int = 1) -> List["AsyncSandbox"]:
        """Snapshots the sandbox (:meth:`snapshot`) and starts ``n`` Sandboxes from it, returned
        once all are Ready: each continues from the same memory with its own name
        (``<name>-fork-xxxxx``), agent token and address; this one keeps running. Delete them with
        :meth:`delete`."""
        if n < 1:
            raise ConfigError(f"fork: n is {n}; want at least 1")
        client = self._kube_client("fork")
        return await client.fork_from(await self.snapshot(), n)

    async def delete(self) -> None:
        """Deletes the Sandbox itself (a fork, or one opened by name); a sandbox from a claim is
        released with :meth:`close`. A Sandbox already gone is fine."""
        if self.claim_name:
            raise ConfigError(f"sandbox {self} belongs to claim {self.claim_name}: release it with close()")
        await self._kube_client("delete")._kube.delete(SANDBOXES, self.namespace, self.name)

    async def _set_mode(self, mode: str, state: Callable[[Obj], bool], spec: Obj | None = None) -> None:
        client = self._kube_client(f"set spec.operatingMode={mode}")
        patch = {"spec": {**(spec or {}), "operatingMode": mode}}
        obj = await client._kube.merge_patch(SANDBOXES, self.namespace, self.name, patch)
        self._obj = await client._wait_sandbox(obj, state)

    def _kube_client(self, doing: str) -> AsyncClient:
        if self._client is None:
            raise ConfigError(f"cannot {doing} on sandbox {self}: it was attached by URL; use Sandbox.connect "
                              "or Sandbox.open with Kubernetes access")
        return self._client

    async def close(self) -> None:
        """Releases the sandbox: deletes its claim when :meth:`claim` created it (the sandbox
        and its Pod are then deleted in the background). Idempotent; a claim already gone is
        fine. Closes the client when the sandbox made its own."""
        if self._closed:
            return
        if self._owns_claim and self._client is not None:
            # A failure leaves the sandbox open, so that close can be called again.
            await asyncio.shield(self._client._kube.delete(CLAIMS, self.namespace, self.claim_name))
        self._closed = True
        if self._owns_client and self._client is not None:
            await self._client.aclose()
        elif self._client is None:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # --- internals ------------------------------------------------------------------------

    async def _resolve(self) -> Tuple[str, Dict[str, str]]:
        if self._fixed is not None:
            return self._fixed[0], {"Authorization": "Bearer " + self._fixed[1]}
        if self._closed:
            raise KuboxError(f"sandbox {self} is closed")
        assert self._client is not None
        return await self._client._endpoint(self)

    def _direct(self) -> bool:
        """True when the agent is reached at the Pod IP (no router in between)."""
        return self._fixed is None and self._client is not None and self._client.connection == "direct"

    def _seen_ready(self) -> bool:
        """True when the sandbox was Ready when the SDK last saw it, through the router: a 503
        then means the router's cache has not caught up yet."""
        if self._client is None or self._client.connection == "direct":
            return False
        try:
            return _claims.sandbox_ready(self._obj) and not _claims.is_suspended(self._obj)
        except KuboxError:
            return False

    async def _agent_token(self) -> str:
        uid = self._obj["metadata"].get("uid", "")
        if self._token[0] == uid and self._token[1]:
            return self._token[1]
        client = self._kube_client("read the agent token")
        secret = await client._kube.get(SECRETS, self.namespace, _claims.agent_secret_name(self.name))
        token = base64.b64decode((secret.get("data") or {}).get(_claims.AGENT_TOKEN_KEY, "")).decode().strip()
        if not token:
            raise KuboxError(f"Secret {self.namespace}/{_claims.agent_secret_name(self.name)} has no \"token\" key: "
                             "the controller has not written the sandbox's agent token; check its agent configuration")
        self._token = (uid, token)
        return token


class AsyncKeepAlive:
    """What :meth:`AsyncSandbox.keep_alive` returns: an async context manager that keeps calling
    the sandbox's agent while its block runs."""

    def __init__(self, agent: Agent, interval: float) -> None:
        self._agent = agent
        self._interval = interval
        self._task: Optional["asyncio.Task[None]"] = None
        #: The error that stopped the calls (the sandbox is gone, the credentials were refused).
        self.error: Optional[KuboxError] = None
        #: How many calls succeeded.
        self.calls = 0

    async def __aenter__(self) -> "AsyncKeepAlive":
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self.error is not None and exc_type is None:
            raise self.error

    async def _run(self) -> None:
        while True:
            try:
                await self._agent.call(LIST, ListProcessesRequest(),
                                       timeout=max(self._interval, KEEP_ALIVE_CALL_TIMEOUT))
                self.calls += 1
            except (NotFoundError, UnauthorizedError, ForbiddenError) as e:
                self.error = e
                return
            except KuboxError:
                pass  # the next tick tries again
            await asyncio.sleep(self._interval)


class Opening(Awaitable[AsyncSandbox]):
    """What :meth:`AsyncSandbox.claim`, ``connect`` and ``open`` return: await it for the
    sandbox, or use it directly as an async context manager, which closes the sandbox at the
    end of the block::

        async with AsyncSandbox.claim(pool="python") as sb:
            ...
    """

    def __init__(self, coro: Coroutine[Any, Any, AsyncSandbox]) -> None:
        self._coro = coro
        self._sandbox: Optional[AsyncSandbox] = None

    def __await__(self) -> Generator[Any, None, AsyncSandbox]:
        return self._coro.__await__()

    async def __aenter__(self) -> AsyncSandbox:
        self._sandbox = await self._coro
        return self._sandbox

    async def __aexit__(self, *exc: Any) -> None:
        if self._sandbox is not None:
            await self._sandbox.close()


async def _with_client(client: Optional[AsyncClient], get: Callable[[AsyncClient], Any]) -> AsyncSandbox:
    """Runs ``get`` with ``client``, or with a new default client that the sandbox then owns."""
    if client is not None:
        return await get(client)
    own = AsyncClient()
    try:
        sb = await get(own)
    except BaseException:
        await own.aclose()
        raise
    sb._owns_client = True
    return sb
