"""The synchronous API: blocking wrappers of the asyncio implementation in :mod:`kubox.aio`,
which runs on the SDK's own event loop thread."""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Callable, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _runner
from ._claims import Obj, SnapshotRef
from ._files import AsyncFiles, AsyncFileWatch
from ._process import AsyncProcess, Command, OutputCallback, Seconds, Stdin
from .aio import DEFAULT_KEEP_ALIVE_INTERVAL, DEFAULT_READY_TIMEOUT, DEFAULT_ROUTER_NAMESPACE, DEFAULT_ROUTER_SERVICE, \
    AsyncClient, AsyncKeepAlive, AsyncSandbox, ClaimToken, ProgressCallback
from .types import CodeContext, CodeResult, CommandResult, Execution, FileEvent, FileInfo, ProcessEvent

_run = _runner.run


class Client:
    """Settings shared by sandboxes: the cluster (kubeconfig), the namespace, and how processes
    and files reach the sandboxes (``connection``: ``"auto"``, ``"router"``,
    ``"port-forward"`` or ``"direct"``; see :class:`kubox.aio.AsyncClient`). Every
    :class:`Sandbox` classmethod takes ``client=``; without one they use a client of the default
    settings. Use it as a context manager, or call :meth:`close`."""

    def __init__(self, *, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                 namespace: Optional[str] = None, connection: str = "auto", router_url: Optional[str] = None,
                 router_namespace: str = DEFAULT_ROUTER_NAMESPACE, router_service: str = DEFAULT_ROUTER_SERVICE,
                 token: Optional[str] = None, ready_timeout: Seconds = DEFAULT_READY_TIMEOUT) -> None:
        async def make() -> AsyncClient:
            return AsyncClient(kubeconfig=kubeconfig, context=context, namespace=namespace, connection=connection,
                               router_url=router_url, router_namespace=router_namespace,
                               router_service=router_service, token=token, ready_timeout=ready_timeout)

        #: The asyncio client this one wraps.
        self.aio: AsyncClient = _run(make())

    @property
    def namespace(self) -> str:
        """The namespace of claims and sandboxes."""
        return self.aio.namespace

    @property
    def connection(self) -> str:
        """The connection mode in use (``auto`` resolved)."""
        return self.aio.connection

    def __repr__(self) -> str:
        return repr(self.aio).replace("AsyncClient", "Client")

    def close(self) -> None:
        """Closes the client's connections and stops its port-forward."""
        _run(self.aio.aclose())

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def claim(self, pool: Optional[str] = None, template: Optional[str] = None, *, namespace: Optional[str] = None,
              ttl: Optional[Seconds] = None, env: Optional[Mapping[str, str]] = None,
              labels: Optional[Mapping[str, str]] = None, pod_labels: Optional[Mapping[str, str]] = None,
              pod_annotations: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
              on_progress: Optional[ProgressCallback] = None, suspend_after: Optional[Seconds] = None,
              idle_policy: Optional[Mapping[str, str]] = None, allow_domains: Optional[Sequence[str]] = None,
              deny_domains: Optional[Sequence[str]] = None, deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> "Sandbox":
        """Claims a sandbox and waits until it is Ready; see :meth:`Sandbox.claim`."""
        return Sandbox.claim(pool, template, client=self, namespace=namespace, ttl=ttl, env=env, labels=labels,
                             pod_labels=pod_labels, pod_annotations=pod_annotations, name=name,
                             on_progress=on_progress, suspend_after=suspend_after, idle_policy=idle_policy,
                             allow_domains=allow_domains, deny_domains=deny_domains, deny_cidrs=deny_cidrs, snapshot=snapshot)

    def create_claim(self, pool: Optional[str] = None, template: Optional[str] = None, *,
                     namespace: Optional[str] = None, ttl: Optional[Seconds] = None,
                     env: Optional[Mapping[str, str]] = None, labels: Optional[Mapping[str, str]] = None,
                     pod_labels: Optional[Mapping[str, str]] = None,
                     pod_annotations: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
                     suspend_after: Optional[Seconds] = None, idle_policy: Optional[Mapping[str, str]] = None,
                     allow_domains: Optional[Sequence[str]] = None, deny_domains: Optional[Sequence[str]] = None,
                     deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> Obj:
        """Creates the SandboxClaim :meth:`claim` would create and returns it (a dict) at once,
        without waiting and without ever deleting it; :meth:`connect` waits for it later."""
        return _run(self.aio.create_claim(pool, template, namespace=namespace, ttl=ttl, env=env, labels=labels,
                                          pod_labels=pod_labels, pod_annotations=pod_annotations, name=name,
                                          suspend_after=suspend_after, idle_policy=idle_policy,
                                          allow_domains=allow_domains, deny_domains=deny_domains,
                                          deny_cidrs=deny_cidrs, snapshot=snapshot))

    def connect(self, claim: str, *, namespace: Optional[str] = None,
                on_progress: Optional[ProgressCallback] = None) -> "Sandbox":
        """The sandbox of the existing claim ``claim``; see :meth:`Sandbox.connect`."""
        return Sandbox.connect(claim, client=self, namespace=namespace, on_progress=on_progress)

    def open(self, sandbox: str, *, namespace: Optional[str] = None) -> "Sandbox":
        """The Sandbox ``sandbox`` by name; see :meth:`Sandbox.open`."""
        return Sandbox.open(sandbox, client=self, namespace=namespace)

    def fork_from(self, snapshot: Obj, n: int) -> List["Sandbox"]:
        """``n`` Sandboxes started from a Ready SandboxSnapshot; see :meth:`AsyncClient.fork_from`."""
        return [Sandbox(f) for f in _run(self.aio.fork_from(snapshot, n))]

    def mint_claim_token(self, claim: str, *, namespace: Optional[str] = None, ttl: Seconds = 3600) -> ClaimToken:
        """A token that opens only the claim's sandbox through kubox-router, for ``ttl`` seconds."""
        return _run(self.aio.mint_claim_token(claim, namespace=namespace, ttl=ttl))


class Process:
    """A process started with :meth:`Sandbox.start`. Iterate it for its events
    (:class:`OutputEvent`, :class:`OutputDropped`, then :class:`ExitEvent`), or call
    :meth:`wait`. As a context manager, it kills the process if it still runs at the end."""

    def __init__(self, aio: AsyncProcess) -> None:
        #: The asyncio process this one wraps.
        self.aio = aio
        self._events = _runner.iterate(aio.__aiter__())

    @property
    def id(self) -> str:
        """The agent's id of the process."""
        return self.aio.id

    @property
    def pid(self) -> int:
        """The process's PID in the sandbox."""
        return self.aio.pid

    @property
    def stdin_error(self) -> Optional[BaseException]:
        """Why copying ``stdin`` (a file object or an iterable) failed; None while it goes well."""
        return self.aio.stdin_error

    @property
    def exit(self) -> Any:
        """The :class:`ExitEvent`, once read; None before."""
        return self.aio.exit

    def __repr__(self) -> str:
        return repr(self.aio).replace("AsyncProcess", "Process")

    def __iter__(self) -> Iterator[ProcessEvent]:
        return self._events

    def wait(self) -> int:
        """Reads the rest of the output (calling the callbacks) and returns the exit code."""
        return _run(self.aio.wait())

    def send_input(self, data: Union[bytes, str]) -> None:
        """Writes to the process's stdin (start it with ``stdin=True``)."""
        _run(self.aio.send_input(data))

    def close_input(self) -> None:
        """Closes stdin (on a terminal: Ctrl-D)."""
        _run(self.aio.close_input())

    def signal(self, sig: Union[str, int]) -> None:
        """Sends a signal (``"SIGINT"``, ``signal.SIGTERM``, ``9``) to the process group."""
        _run(self.aio.signal(sig))

    def kill(self) -> None:
        """Kills the process group (SIGKILL); an exited process is left alone."""
        _run(self.aio.kill())

    def resize(self, rows: int, cols: int) -> None:
        """Resizes the terminal of a process started with ``tty=(rows, cols)``."""
        _run(self.aio.resize(rows, cols))

    def close(self) -> None:
        """Stops following the process (it keeps running in the sandbox)."""
        self._events.close()
        _run(self.aio.aclose())

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._events.close()
        _run(self.aio.__aexit__(*exc))


class FileWatch:
    """Changes in a directory, from :meth:`Files.watch`: iterate it for :class:`FileEvent`;
    close it, or leave its ``with`` block, to stop."""

    def __init__(self, aio: AsyncFileWatch) -> None:
        #: The asyncio watch this one wraps.
        self.aio = aio
        self._events = _runner.iterate(aio.__aiter__())

    def __iter__(self) -> Iterator[FileEvent]:
        return self._events

    def close(self) -> None:
        """Stops watching."""
        self._events.close()
        _run(self.aio.aclose())

    def __enter__(self) -> "FileWatch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Files:
    """The files of a sandbox (``sb.files``); see :class:`kubox.aio.AsyncFiles` for details."""

    def __init__(self, aio: AsyncFiles) -> None:
        #: The asyncio file API this one wraps.
        self.aio = aio

    def read(self, path: str) -> bytes:
        """The file's contents."""
        return _run(self.aio.read(path))

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The file's contents as text."""
        return _run(self.aio.read_text(path, encoding))

    def stream(self, path: str) -> Iterator[bytes]:
        """The file's contents in chunks, for files too big to hold in memory."""
        return _runner.iterate(self.aio.stream(path))

    def download(self, path: str, dest: Union[str, "os.PathLike[str]"]) -> int:
        """Copies the file to the local file ``dest`` (streamed); returns its size."""
        return _run(self.aio.download(path, dest))

    def write(self, path: str, data: Union[bytes, bytearray, str, BinaryIO, Iterable[bytes]], *,
              mode: Optional[int] = None) -> None:
        """Writes the file atomically, creating its parents; files and iterables are streamed.
        ``mode`` (``0o755``) sets the permission bits."""
        _run(self.aio.write(path, data, mode=mode))

    def upload(self, src: Union[str, "os.PathLike[str]"], path: str, *, mode: Optional[int] = None) -> None:
        """Copies the local file ``src`` to ``path`` in the sandbox (streamed)."""
        _run(self.aio.upload(src, path, mode=mode))

    def stat(self, path: str) -> FileInfo:
        """Describes the file (a final symbolic link itself)."""
        return _run(self.aio.stat(path))

    def exists(self, path: str) -> bool:
        """True when something exists at ``path``."""
        return _run(self.aio.exists(path))

    def list(self, path: str = ".") -> List[FileInfo]:
        """The entries of the directory, sorted by path."""
        return _run(self.aio.list(path))

    def make_dir(self, path: str) -> None:
        """Creates the directory and its parents; an existing one is fine."""
        _run(self.aio.make_dir(path))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Deletes the file, link or empty directory; with ``recursive``, everything below too."""
        _run(self.aio.remove(path, recursive=recursive))

    def move(self, src: str, dst: str, *, overwrite: bool = False) -> FileInfo:
        """Renames ``src`` to ``dst``; an existing ``dst`` is replaced only with ``overwrite``."""
        return _run(self.aio.move(src, dst, overwrite=overwrite))

    def watch(self, path: str, *, recursive: bool = False) -> FileWatch:
        """Watches the directory; returns once the agent watches, so every later change is seen."""
        return FileWatch(_run(self.aio.watch(path, recursive=recursive)))


class Sandbox:
    """A sandbox: run processes, move files, suspend, resume, release::

        with Sandbox.claim(pool="python") as sb:
            print(sb.run("python3 -c 'print(1)'").stdout)

    Leaving the ``with`` block (or :meth:`close`) deletes the claim that :meth:`claim` created.
    """

    def __init__(self, aio: AsyncSandbox) -> None:
        #: The asyncio sandbox this one wraps.
        self.aio = aio
        #: The sandbox's files.
        self.files = Files(aio.files)

    @property
    def name(self) -> str:
        """The sandbox's name (also its hostname)."""
        return self.aio.name

    @property
    def namespace(self) -> str:
        """The sandbox's namespace."""
        return self.aio.namespace

    @property
    def claim_name(self) -> str:
        """The claim the sandbox came through; "" for :meth:`open`."""
        return self.aio.claim_name

    @property
    def object(self) -> Obj:
        """The Sandbox object as last seen (a dict)."""
        return self.aio.object

    def __str__(self) -> str:
        return str(self.aio)

    def __repr__(self) -> str:
        return repr(self.aio).replace("AsyncSandbox", "Sandbox")

    @classmethod
    def claim(cls, pool: Optional[str] = None, template: Optional[str] = None, *, client: Optional[Client] = None,
              namespace: Optional[str] = None, ttl: Optional[Seconds] = None, env: Optional[Mapping[str, str]] = None,
              labels: Optional[Mapping[str, str]] = None, pod_labels: Optional[Mapping[str, str]] = None,
              pod_annotations: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
              on_progress: Optional[ProgressCallback] = None, suspend_after: Optional[Seconds] = None,
              idle_policy: Optional[Mapping[str, str]] = None, allow_domains: Optional[Sequence[str]] = None,
              deny_domains: Optional[Sequence[str]] = None, deny_cidrs: Optional[Sequence[str]] = None,
        snapshot: Optional[SnapshotRef] = None) -> "Sandbox":
        """Claims a sandbox from the SandboxWarmPool ``pool`` or, without a pool, a new one from
        the SandboxTemplate ``template``, and waits until it is Ready (one watch, no polling).

        ``suspend_after`` (seconds or a timedelta, 30 s to 8760 h) suspends the sandbox after
        that long without activity, and the next request through kubox-router wakes it;
        ``idle_policy`` gives the whole policy in the API's spelling (``runningProcesses``,
        ``wake``); :meth:`keep_alive` holds the sandbox awake meanwhile.

        ``allow_domains`` (names such as ``pypi.org``, or ``*.pythonhosted.org`` for the names
        below it), ``deny_domains`` and ``deny_cidrs`` narrow the template's egress for this
        sandbox (the claim's spec.egress): it may reach only the allowed names among those the
        template allows, never the denied ones. A name the template does not allow fails the claim
        with reason ``EgressRejected``.

        ``snapshot`` (a SandboxSnapshot's name, or what :meth:`snapshot` returns) starts the
        sandbox from that snapshot, its processes and memory as they were (a snapshot of a
        sandbox of the same template).

        ``ttl`` (seconds or a timedelta) makes the claim expire even if this program dies;
        ``env`` sets environment variables (the template must allow them); ``labels`` label the
        claim; ``pod_labels``/``pod_annotations`` go on the Pod; ``name`` names the claim;
        ``on_progress`` sees every version of the claim while waiting. ``client`` carries the
        settings (kubeconfig, namespace, connection); by default the kubeconfig,
        ``$KUBOX_ROUTER_URL`` and the router URL ``make dev`` writes into the kubeconfig.

        Raises :class:`ClaimFailedError` (naming the claim's reason and the fix) or
        :class:`SandboxTimeoutError`, after deleting the claim.
        """
        return cls(_run(AsyncSandbox.claim(
            pool, template, client=client.aio if client else None, namespace=namespace, ttl=ttl, env=env,
            labels=labels, pod_labels=pod_labels, pod_annotations=pod_annotations, name=name,
            on_progress=on_progress, suspend_after=suspend_after, idle_policy=idle_policy,
            allow_domains=allow_domains, deny_domains=deny_domains, deny_cidrs=deny_cidrs, snapshot=snapshot)))

    @classmethod
    def connect(cls, claim: str, *, client: Optional[Client] = None, namespace: Optional[str] = None,
                on_progress: Optional[ProgressCallback] = None) -> "Sandbox":
        """The sandbox of the existing SandboxClaim ``claim``, once Ready (a suspended one at
        once, to resume it). Closing it does not delete the claim."""
        return cls(_run(AsyncSandbox.connect(claim, client=client.aio if client else None, namespace=namespace,
                                             on_progress=on_progress)))

    @classmethod
    def open(cls, sandbox: str, *, client: Optional[Client] = None, namespace: Optional[str] = None) -> "Sandbox":
        """The Sandbox ``sandbox`` by name, with no claim, once Ready (a suspended one at once)."""
        return cls(_run(AsyncSandbox.open(sandbox, client=client.aio if client else None, namespace=namespace)))

    @classmethod
    def attach(cls, url: str, token: str, *, name: str = "") -> "Sandbox":
        """A sandbox's agent API at ``url`` with the bearer ``token``, without the Kubernetes API
        (for example ``<router>/claims/<ns>/<claim>`` and a claim token); see
        :meth:`AsyncSandbox.attach`."""
        return cls(_run(_attach(url, token, name)))

    def run(self, cmd: Command, *, timeout: Optional[Seconds] = None, env: Optional[Mapping[str, str]] = None,
            cwd: Optional[str] = None, stdin: Union[bytes, str, None] = None, check: bool = False,
            max_output_bytes: Optional[int] = None) -> CommandResult:
        """Runs a command to completion: a shell line (``"ls | wc -l"``) or a list (no shell).
        Returns ``stdout``, ``stderr``, ``exit_code``; a non-zero exit is not an error unless
        ``check``. ``timeout`` (seconds) kills the process group when it passes."""
        return _run(self.aio.run(cmd, timeout=timeout, env=env, cwd=cwd, stdin=stdin, check=check,
                                 max_output_bytes=max_output_bytes))

    def start(self, cmd: Command, *, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
              timeout: Optional[Seconds] = None, stdin: Stdin = None,
              tty: Optional[Tuple[int, int]] = None, on_stdout: Optional[OutputCallback] = None,
              on_stderr: Optional[OutputCallback] = None) -> Process:
        """Starts a command and returns once it runs; iterate the :class:`Process` for its output
        as it is written, or pass ``on_stdout``/``on_stderr`` and call ``wait()``.
        ``stdin=True`` keeps stdin open for ``send_input``; bytes, text, a file object or an
        iterable of bytes are copied to it, then it is closed; ``tty=(rows, cols)`` gives it a
        terminal."""
        return Process(_run(self.aio.start(cmd, env=env, cwd=cwd, timeout=timeout, stdin=stdin, tty=tty,
                                           on_stdout=on_stdout, on_stderr=on_stderr)))

    def run_code(self, code: str, *, language: Optional[str] = None, context: Optional[CodeContext] = None,
                 envs: Optional[Mapping[str, str]] = None, timeout: Optional[Seconds] = None,
                 on_stdout: Optional[Callable[[str], Any]] = None, on_stderr: Optional[Callable[[str], Any]] = None,
                 on_result: Optional[Callable[[CodeResult], Any]] = None) -> Execution:
        """Runs code in the sandbox's code interpreter, keeping state in its context between calls
        (``x = 41`` then ``x + 1`` gives the main result ``42``); see
        :meth:`AsyncSandbox.run_code`."""
        return _run(self.aio.run_code(code, language=language, context=context, envs=envs, timeout=timeout,
                                      on_stdout=on_stdout, on_stderr=on_stderr, on_result=on_result))

    def create_code_context(self, *, language: Optional[str] = None, cwd: Optional[str] = None) -> CodeContext:
        """Starts a new context of the code interpreter (an interpreter of its own)."""
        return _run(self.aio.create_code_context(language=language, cwd=cwd))

    def list_code_contexts(self) -> List[CodeContext]:
        """The code interpreter's contexts."""
        return _run(self.aio.list_code_contexts())

    def restart_code_context(self, context: CodeContext) -> None:
        """Stops the context's interpreter; the next run_code in it starts afresh."""
        _run(self.aio.restart_code_context(context))

    def remove_code_context(self, context: CodeContext) -> None:
        """Stops the context's interpreter and removes the context."""
        _run(self.aio.remove_code_context(context))

    def keep_alive(self, interval: Seconds = DEFAULT_KEEP_ALIVE_INTERVAL) -> "KeepAlive":
        """Holds a sandbox with an idle policy awake while the program works without sending it
        requests::

            with sb.keep_alive(interval=60):
                think_for_a_while()

        A background task calls the agent's cheap ListProcesses at once and every ``interval``
        seconds (below half of suspendAfter), which kubox-router and kubox-agent both count as
        activity; see :meth:`AsyncSandbox.keep_alive`."""
        return KeepAlive(self.aio.keep_alive(interval))

    def snapshot(self, *, filesystem_only: bool = False) -> Obj:
        """Snapshots the running sandbox without stopping it (gVisor) and returns the Ready
        SandboxSnapshot, or :class:`SnapshotFailedError` says why not; with ``filesystem_only``,
        its files only; see :meth:`AsyncSandbox.snapshot`."""
        return _run(self.aio.snapshot(filesystem_only=filesystem_only))

    def fork(self, n: int = 1) -> List["Sandbox"]:
        """Snapshots the sandbox and starts ``n`` Sandboxes that continue from its memory, once
        all are Ready; see :meth:`AsyncSandbox.fork`."""
        return [Sandbox(f) for f in _run(self.aio.fork(n))]

    def delete(self) -> None:
        """Deletes the Sandbox itself (a fork); see :meth:`AsyncSandbox.delete`."""
        _run(self.aio.delete())

    def suspend(self, keep_memory: bool = False) -> None:
        """Suspends the sandbox and waits until its Pod is gone (volumes and claim stay). With
        ``keep_memory`` (gVisor), its memory too, or :class:`MemoryNotKeptError` says why not; see
        :meth:`AsyncSandbox.suspend`."""
        _run(self.aio.suspend(keep_memory))

    def resume(self) -> None:
        """Resumes the sandbox and waits until it is Ready."""
        _run(self.aio.resume())

    def close(self) -> None:
        """Releases the sandbox: deletes the claim :meth:`claim` created. Idempotent."""
        _run(self.aio.close())

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class KeepAlive:
    """What :meth:`Sandbox.keep_alive` returns: a context manager that keeps calling the
    sandbox's agent, from the SDK's event loop thread, while its block runs."""

    def __init__(self, aio: AsyncKeepAlive) -> None:
        #: The asyncio keep-alive this one wraps.
        self.aio = aio

    @property
    def calls(self) -> int:
        """How many calls succeeded."""
        return self.aio.calls

    def __enter__(self) -> "KeepAlive":
        _run(self.aio.__aenter__())
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        _run(self.aio.__aexit__(exc_type, *exc))


async def _attach(url: str, token: str, name: str) -> AsyncSandbox:
    # The sandbox's HTTP client must be made on the SDK's loop.
    return AsyncSandbox.attach(url, token, name=name)
