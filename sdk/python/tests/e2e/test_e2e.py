"""The Python SDK on a real node: a warm gVisor sandbox claimed, used and released through the
in-cluster kubox-router, with nothing configured but KUBECONFIG."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client as kclient
from kubernetes import config as kconfig

import kubox
from kubox import AsyncSandbox, OutputEvent, Sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PROGRAM = """import hashlib, json, sys
data = open("/tmp/input.bin", "rb").read()
print(json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                  "gvisor": "gvisor" in open("/proc/version").read().lower()}))
print("done", file=sys.stderr)
"""


def claim_gone(namespace: str, name: str) -> bool:
    api = kclient.CustomObjectsApi(kconfig.new_client_from_config())
    try:
        c = api.get_namespaced_custom_object("extensions.agents.x-k8s.io", "v1beta1", namespace, "sandboxclaims", name)
    except kclient.ApiException as e:
        return e.status == 404
    return bool(c["metadata"].get("deletionTimestamp"))


def test_claim_run_stream_files_release(namespace):
    data = os.urandom(8 << 20)
    with Sandbox.claim(pool="python", namespace=namespace, ttl=600) as sb:
        # run: output and exit code
        r = sb.run("python3 -c 'import sys; print(6*7); sys.exit(3)'")
        assert (r.exit_code, r.stdout) == (3, "42\n")
        # files: a program and 8 MiB of data in, a result out
        sb.files.write("/tmp/prog.py", PROGRAM)
        sb.files.write("/tmp/input.bin", data)
        r = sb.run(["python3", "/tmp/prog.py"], check=True)
        report = json.loads(r.stdout)
        assert report == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "gvisor": True}
        assert r.stderr == "done\n"
        assert sb.files.read("/tmp/input.bin") == data
        assert "prog.py" in [f.name for f in sb.files.list("/tmp")]
        # stream: lines as they are printed, with stdin
        p = sb.start(["python3", "-u", "-c", "import sys\nfor l in sys.stdin: print(l.strip().upper())"], stdin=True)
        it = iter(p)
        p.send_input("hello\n")
        line = ""
        while not line.endswith("\n"):  # a line may arrive in more than one event
            line += next(it).text
        assert line == "HELLO\n"
        p.close_input()
        assert [e for e in it if isinstance(e, OutputEvent)] == [] and p.exit.exit_code == 0
        name = sb.claim_name
    assert claim_gone(namespace, name)


@pytest.mark.asyncio
async def test_async_claim_and_run(namespace):
    async with AsyncSandbox.claim(pool="python", namespace=namespace) as sb:
        r = await sb.run(["python3", "-c", "print('async')"])
        assert r.stdout == "async\n"


def test_env_reaches_the_sandbox(namespace):
    """A claim's env (the sample template allows it) is in the sandbox's environment; setting env
    makes the claim start a sandbox of its own (cold) instead of taking a warm one."""
    with Sandbox.claim(pool="python", namespace=namespace, env={"GREETING": "from the claim"}) as sb:
        assert sb.run("echo $GREETING").stdout == "from the claim\n"


def test_missing_pool_names_the_fix(namespace):
    with pytest.raises(kubox.ClaimFailedError, match='create SandboxWarmPool "nope"'):
        Sandbox.claim(pool="nope", namespace=namespace)


def test_port_forward_to_the_router(namespace):
    """Without a router URL and outside the cluster, the SDK reaches kubox-router through a
    port-forward (the API server's WebSocket port-forward) to a ready router Pod."""
    with kubox.Client(connection="port-forward", namespace=namespace) as c:
        with c.claim(pool="python") as sb:
            assert sb.run(["python3", "-c", "print('forwarded')"]).stdout == "forwarded\n"
            data = os.urandom(8 << 20)  # many WebSocket frames each way
            sb.files.write("/tmp/pf.bin", data)
            assert sb.files.read("/tmp/pf.bin") == data
            p = sb.start(["python3", "-u", "-c", "import time\nfor i in range(3): print(i); time.sleep(0.1)"])
            assert "".join(e.text for e in p if isinstance(e, OutputEvent)) == "0\n1\n2\n"
        assert c.aio._forward is not None and c.aio._forward.url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("example,args,expect", [
    ("notebook.py", [], ["result: {'mean': 3.875, 'median': 3.5}", "streamed job exited with 0", "released"]),
    ("async_agents.py", ["--agents", "2"], [": 499500", ": 1999000"]),
])
def test_examples_run(namespace, example, args, expect):
    """The examples in sdk/python/examples work as written."""
    r = subprocess.run([sys.executable, str(EXAMPLES / example), "--pool", "python", "--namespace", namespace, *args],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in expect:
        assert line in r.stdout, r.stdout
