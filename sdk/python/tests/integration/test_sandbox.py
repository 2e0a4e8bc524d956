"""Claim, run, stream, files, release through kubox-router, with the default settings (the
kubeconfig and the router URL in its kubox.dev/router extension)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time

import httpx
import pytest

import kubox
from kubox import AsyncSandbox, Client, NotFoundError, OutputEvent, Sandbox


def test_claim_run_files_release(env):
    with Sandbox.claim(pool=env.pool) as sb:
        claim = env.claim(sb.claim_name)
        assert claim["metadata"]["labels"]["agents.x-k8s.io/created-by"] == "python-client"
        assert claim["spec"]["warmPoolRef"] == {"name": env.pool}
        assert sb.namespace == env.namespace and sb.name == claim["status"]["sandbox"]["name"]
        r = sb.run("echo through the router; exit 4")
        assert (r.exit_code, r.stdout) == (4, "through the router\n")
        sb.files.write("/tmp/in.py", "print(6 * 7)\n")
        assert sb.files.read_text("/tmp/in.py") == "print(6 * 7)\n"
        assert sb.files.exists("/tmp/in.py")
        name = sb.claim_name
    assert env.being_deleted_or_gone(name), "leaving the with block must delete the claim"


def test_stream_with_stdin_and_signal_through_the_router(env):
    with Sandbox.claim(pool=env.pool) as sb:
        p = sb.start("trap 'echo bye; exit 3' INT; while read l; do echo got $l; done", stdin=True)
        it = iter(p)
        p.send_input("one\n")
        assert next(it).text == "got one\n"
        p.signal("SIGINT")
        rest = [e for e in it]
        assert any(isinstance(e, OutputEvent) and e.text == "bye\n" for e in rest)
        assert p.exit.exit_code == 3


def test_claim_from_a_template_with_ttl_and_labels(env):
    with Sandbox.claim(template=env.template, ttl=600, labels={"suite": "python"}) as sb:
        claim = env.claim(sb.claim_name)
        assert claim["spec"]["sandboxTemplateRef"] == {"name": env.template}
        assert claim["spec"]["lifecycle"]["shutdownPolicy"] == "Delete"
        assert claim["metadata"]["labels"]["suite"] == "python"
        assert sb.run(["echo", "cold"]).stdout == "cold\n"


def test_connect_to_an_existing_claim_keeps_it(env):
    with Client() as c:
        created = c.create_claim(pool=env.pool)
        name = created["metadata"]["name"]
        seen = []
        with Sandbox.connect(name, client=c, on_progress=seen.append) as sb:
            assert sb.claim_name == name and sb.run("true").ok
        assert seen and seen[-1]["metadata"]["name"] == name
        assert not env.being_deleted_or_gone(name), "closing a connected sandbox must not delete the claim"
        env.custom.delete_namespaced_custom_object("extensions.agents.x-k8s.io", "v1beta1", env.namespace,
                                                   "sandboxclaims", name)


def test_a_missing_pool_fails_with_the_reason_and_deletes_the_claim(env):
    with pytest.raises(kubox.ClaimFailedError) as e:
        Sandbox.claim(pool="no-such-pool", labels={"case": "missing-pool"})
    err = e.value
    assert err.reason == "WarmPoolNotFound" and 'create SandboxWarmPool "no-such-pool"' in str(err)
    assert env.being_deleted_or_gone(err.claim)


def test_a_claim_that_is_not_ready_in_time_is_deleted(env):
    with Client(ready_timeout=2) as c:
        with pytest.raises(kubox.SandboxTimeoutError) as e:
            c.claim(template=env.pending_template, labels={"case": "timeout"})
    assert "is not Ready after 2s; last Ready=" in str(e.value)
    left = [c for c in env.claims("case=timeout") if not c["metadata"].get("deletionTimestamp")]
    assert left == []


def test_waiting_uses_one_watch_and_never_polls(env):
    requests = []
    with Client() as c:
        async def record(req: httpx.Request) -> None:
            requests.append((req.method, req.url.path, req.url.params.get("watch", "")))

        c.aio._kube._http.event_hooks["request"].append(record)
        with c.claim(pool=env.pool) as sb:
            name = sb.claim_name
    claim_path = f"/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{env.namespace}/sandboxclaims"
    watches = [r for r in requests if r[2] == "true"]
    assert len(watches) == 1 and watches[0][1] == claim_path, requests
    assert not [r for r in requests if r[0] == "GET" and r[1] == f"{claim_path}/{name}"], requests
    assert [r[0] for r in requests] == ["POST", "GET", "GET", "DELETE"], requests


def test_direct_connection(env):
    with Client(connection="direct") as c, c.claim(pool=env.pool) as sb:
        assert sb.run("echo direct").stdout == "direct\n"


def test_port_forward_to_the_router(env):
    """Without a router URL, the SDK reaches kubox-router through a WebSocket port-forward it opens
    itself (v4.channel.k8s.io) to the router's Pod, found through its Service's EndpointSlices,
    through the real API server and the kubelet's own port-forward handler."""
    with Client(connection="port-forward", router_namespace=env.namespace, router_service=env.router_service) as c:
        with c.claim(pool=env.pool) as sb:
            assert sb.run(["echo", "forwarded"]).stdout == "forwarded\n"
            data = os.urandom(8 << 20)  # many WebSocket messages each way
            path = f"/tmp/pf-{os.getpid()}.bin"
            sb.files.write(path, data)
            assert sb.files.read(path) == data
            sb.files.remove(path)
            p = sb.start("for i in 0 1 2; do echo $i; sleep 0.1; done")
            assert "".join(e.text for e in p if isinstance(e, OutputEvent)) == "0\n1\n2\n"
        forward = c.aio._forward
        assert forward is not None and forward.alive() and forward.url.startswith("http://127.0.0.1:")


def test_a_port_forward_the_pod_refuses_is_a_connection_error(env):
    """The kubelet's error (nothing listens on the Pod's port) ends the connection and the
    forward: the SDK raises a connection error and forwards anew on the next call."""
    with Client() as c, c.claim(pool=env.pool) as sb:
        with Client(connection="port-forward", router_namespace=env.namespace,
                    router_service=env.router_service + "-down") as down:
            with pytest.raises(kubox.SandboxConnectionError):
                Sandbox.connect(sb.claim_name, client=down).run("true")
            assert not down.aio._forward.alive()


def test_router_refuses_an_identity_without_connect_rbac(env):
    with Client(token=env.noconnect_token) as c, c.claim(pool=env.pool) as sb:
        with pytest.raises(kubox.ForbiddenError) as e:
            sb.run("true")
    assert e.value.status == 403 and "sandboxes/connect" in str(e.value)


def test_claim_token_opens_only_its_claim_until_it_is_released(env):
    with Client() as c:
        sb = c.claim(pool=env.pool)
        tok = c.mint_claim_token(sb.claim_name, ttl=600)
        assert tok.token.startswith("kbx1.") and tok.expires_at is not None
        holder = Sandbox.attach(f"{env.router_url}/claims/{env.namespace}/{sb.claim_name}", tok.token)
        assert holder.run("echo holder").stdout == "holder\n"
        other = c.claim(pool=env.pool)
        try:
            stranger = Sandbox.attach(f"{env.router_url}/claims/{env.namespace}/{other.claim_name}", tok.token)
            with pytest.raises(kubox.ForbiddenError):
                stranger.run("true")
            stranger.close()
        finally:
            other.close()
        sb.close()
        deadline = time.monotonic() + 30
        while True:  # the router's cache learns of the deletion from its watch
            try:
                holder.run("true")
            except kubox.UnauthorizedError:
                break
            assert time.monotonic() < deadline, "the claim token still works after the claim was deleted"
            time.sleep(0.2)
        holder.close()


def test_suspend_and_resume(env):
    with Sandbox.claim(template=env.template) as sb:
        ip = sb.object["status"]["podIPs"][0]
        sb.suspend()
        assert not sb.object["status"].get("podIPs")
        with pytest.raises(kubox.SandboxNotReadyError):
            sb.run("true")
        sb.resume()
        assert sb.object["status"]["podIPs"][0] != ip
        assert sb.run("echo back").stdout == "back\n"


def test_suspend_keep_memory_without_a_node_says_why(env):
    # The controller here reaches no kubox-node: the sandbox is suspended without its memory, and
    # the SDK says so with the controller's reason.
    with Sandbox.claim(template=env.template) as sb:
        with pytest.raises(kubox.MemoryNotKeptError, match="controllers.sandbox.memory.tokenFile"):
            sb.suspend(keep_memory=True)
        assert sb.object["spec"]["suspendPolicy"] == {"keepMemory": True}
        assert not sb.object["status"].get("podIPs")
        sb.resume()
        assert sb.run("echo back").stdout == "back\n"


@pytest.mark.asyncio
async def test_async_claims_run_concurrently(env):
    async def one(i: int) -> str:
        # Both forms: awaited, then used as a context manager; and a context manager at once.
        claiming = AsyncSandbox.claim(pool=env.pool)
        async with (await claiming if i == 1 else claiming) as sb:
            r = await sb.run(["sh", "-c", f"echo {i} $(hostname)"])
            await sb.files.write(f"/tmp/{i}.txt", str(i))
            assert await sb.files.read_text(f"/tmp/{i}.txt") == str(i)
            return sb.name + " " + r.stdout

    out = await asyncio.gather(one(1), one(2))
    names = {o.split()[0] for o in out}
    assert len(names) == 2, out


def test_ctrl_c_while_waiting_deletes_the_claim(env):
    script = "import sys, kubox\nkubox.Sandbox.claim(template=sys.argv[1], labels={'case': 'interrupted'})"
    p = subprocess.Popen([sys.executable, "-c", script, env.pending_template], env=os.environ,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not env.claims("case=interrupted"):
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline, "the claim was not created"
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert "KeyboardInterrupt" in err
    left = [c["metadata"]["name"] for c in env.claims("case=interrupted") if not c["metadata"].get("deletionTimestamp")]
    assert left == [], "an interrupted claim must delete its SandboxClaim"


def test_a_missing_claim_or_sandbox_is_not_found_by_name(env):
    with pytest.raises(kubox.NotFoundError) as e:
        Sandbox.connect("no-such-claim")
    assert e.value.status == 404 and f"SandboxClaim {env.namespace}/no-such-claim" in str(e.value)
    with pytest.raises(kubox.NotFoundError, match=f"Sandbox {env.namespace}/no-such-sandbox"):
        Sandbox.open("no-such-sandbox")


def test_env_the_template_does_not_allow_fails_the_claim(env):
    with pytest.raises(kubox.ClaimFailedError) as e:
        Sandbox.claim(template=env.template, env={"MODE": "test"}, labels={"case": "env-rejected"})
    assert e.value.reason == "EnvVarsInjectionRejected" and "envVarsInjectionPolicy" in str(e.value)
    assert env.being_deleted_or_gone(e.value.claim)


def test_snapshot_and_fork_without_a_node_say_why(env):
    # The controller here reaches no kubox-node: the snapshot fails with the controller's reason,
    # and fork starts no sandbox.
    with Sandbox.claim(template=env.template) as sb:
        with pytest.raises(kubox.SnapshotFailedError, match="controllers.sandbox.memory.tokenFile"):
            sb.snapshot()
        with pytest.raises(kubox.SnapshotFailedError):
            sb.fork(2)
        with pytest.raises(kubox.ConfigError, match="at least 1"):
            sb.fork(0)
        assert sb.run("echo still").stdout == "still\n"


def test_run_code_keeps_state_streams_and_contexts_through_the_router(env):
    with Sandbox.claim(pool=env.pool) as sb:
        assert sb.run_code("x = 41").error is None
        ex = sb.run_code("x + 1")
        assert (ex.text, ex.error, ex.execution_count) == ("42", None, 2)
        assert [r.is_main_result for r in ex.results] == [True]

        ex = sb.run_code("def f():\n    return 1 / 0\nf()")
        assert ex.error is not None and ex.error.name == "ZeroDivisionError"
        assert "return 1 / 0" in ex.error.traceback and not ex.results

        # The code waits for a file that only the stdout callback creates on seeing "first":
        # it ends only if output is delivered while it runs. (The interpreter runs on this host.)
        gate = os.path.join(tempfile.mkdtemp(), "go")
        seen = []

        def on_stdout(text):
            seen.append(text)
            if "".join(seen) == "first\n":
                open(gate, "w").close()

        code = ("import os, time\nprint('first', flush=True)\n"
                f"while not os.path.exists({gate!r}):\n    time.sleep(0.01)\nprint('second', flush=True)\n")
        ex = sb.run_code(code, on_stdout=on_stdout, timeout=60)
        assert "".join(seen) == "first\nsecond\n" and ex.logs.stdout == seen

        other = sb.create_code_context(language="python")
        assert other.id and other.language == "python"
        ex = sb.run_code("x", context=other)
        assert ex.error is not None and ex.error.name == "NameError", "a second context must not see x"
        assert other.id in [c.id for c in sb.list_code_contexts()]
        sb.run_code("y = 7", context=other)
        sb.restart_code_context(other)
        assert sb.run_code("y", context=other).error.name == "NameError"
        assert sb.run_code("x").text == "41"
        sb.remove_code_context(other)
        with pytest.raises(NotFoundError, match=other.id):
            sb.run_code("1", context=other)
        assert sb.run_code("const n = 2; n + 1", language="javascript").text == "3"
        assert sb.run_code("import os\nos.environ['G']", envs={"G": "hi"}).text == "hi"
