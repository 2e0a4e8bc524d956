"""The SandboxClaim the SDK creates and how it reads claims and sandboxes (no server)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
import yaml

from kubox import AsyncClient, AsyncSandbox, ClaimFailedError, Client, ConfigError, Sandbox, SandboxNotReadyError
import kubox
from kubox import _claims

NOW = dt.datetime(2026, 12, 4, 8, 0, 0, 123456, tzinfo=dt.timezone.utc)


def test_claim_from_pool_with_everything():
    c = _claims.build_claim(namespace="team-a", pool="python", ttl=3600.5, env={"B": "2", "A": "1"},
                            labels={"app": "ci"}, pod_labels={"run": "42"}, pod_annotations={"note": "x"}, now=NOW)
    assert c["apiVersion"] == "extensions.agents.x-k8s.io/v1beta1" and c["kind"] == "SandboxClaim"
    assert c["metadata"] == {
        "namespace": "team-a", "generateName": "kubox-",
        "labels": {"app": "ci", "agents.x-k8s.io/created-by": "python-client"},
        "annotations": {"agents.x-k8s.io/client-first-requested-at": "2026-12-04T08:00:00.123456000Z"},
    }
    assert c["spec"] == {
        "warmPoolRef": {"name": "python"},
        "lifecycle": {"shutdownTime": "2026-12-04T09:00:00Z", "shutdownPolicy": "Delete"},
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "additionalPodMetadata": {"labels": {"run": "42"}, "annotations": {"note": "x"}},
    }


def test_claim_from_template_with_a_name():
    c = _claims.build_claim(namespace="ns", template="python", name="mine", now=NOW)
    assert c["metadata"]["name"] == "mine" and "generateName" not in c["metadata"]
    assert c["spec"] == {"sandboxTemplateRef": {"name": "python"}}


def test_the_created_by_label_cannot_be_overridden():
    c = _claims.build_claim(namespace="ns", pool="p", labels={"agents.x-k8s.io/created-by": "me"}, now=NOW)
    assert c["metadata"]["labels"]["agents.x-k8s.io/created-by"] == "python-client"


@pytest.mark.parametrize("kw", [{}, {"pool": "a", "template": "b"}, {"pool": "a", "ttl": -1}])
def test_bad_claims_are_refused(kw):
    with pytest.raises(ConfigError):
        _claims.build_claim(namespace="ns", **kw)


def claim(status="False", reason="", gen=1, observed=1, sandbox="", message="m", pool="python"):
    return {"metadata": {"namespace": "ns", "name": "c1", "generation": gen},
            "spec": {"warmPoolRef": {"name": pool}},
            "status": {"observedGeneration": observed, "sandbox": {"name": sandbox},
                       "conditions": [{"type": "Ready", "status": status, "reason": reason, "message": message,
                                       "observedGeneration": observed}]}}


def test_claim_state():
    assert _claims.claim_state(claim("True", "Ready", sandbox="s1"))
    assert _claims.claim_state(claim("False", "SandboxSuspended", sandbox="s1"))
    assert not _claims.claim_state(claim("True", "Ready"))  # no sandbox yet
    assert not _claims.claim_state(claim("True", "Ready", sandbox="s1", gen=2))  # stale status
    assert not _claims.claim_state(claim("False", "SandboxNotReady"))  # on its way
    assert not _claims.claim_state({"metadata": {"generation": 1}})


def test_terminal_claim_reasons_raise_with_the_fix():
    with pytest.raises(ClaimFailedError) as e:
        _claims.claim_state(claim("False", "WarmPoolNotFound", message="pool missing", pool="nope"))
    err = e.value
    assert (err.namespace, err.claim, err.reason, err.condition_message) == ("ns", "c1", "WarmPoolNotFound", "pool missing")
    assert 'create SandboxWarmPool "nope" in namespace ns' in str(err) and "SandboxClaim ns/c1" in str(err)
    with pytest.raises(ClaimFailedError, match="envVarsInjectionPolicy"):
        _claims.claim_state(claim("False", "EnvVarsInjectionRejected"))
    # A stale terminal status does not count.
    assert not _claims.claim_state(claim("False", "ClaimExpired", gen=2))


def sandbox(status, reason="", ips=("10.0.0.1",), gen=1, observed=1, suspended=None):
    conds = [{"type": "Ready", "status": status, "reason": reason, "message": "m", "observedGeneration": observed}]
    if suspended:
        conds.append({"type": "Suspended", "status": suspended, "observedGeneration": observed})
    return {"metadata": {"namespace": "ns", "name": "s1", "generation": gen},
            "status": {"podIPs": list(ips), "conditions": conds}}


def test_sandbox_ready_and_suspended():
    assert _claims.sandbox_ready(sandbox("True"))
    assert not _claims.sandbox_ready(sandbox("True", ips=()))
    assert not _claims.sandbox_ready(sandbox("True", gen=2))
    assert not _claims.sandbox_ready(sandbox("False", "DependenciesNotReady"))
    with pytest.raises(SandboxNotReadyError, match="will not become Ready: SandboxExpired"):
        _claims.sandbox_ready(sandbox("False", "SandboxExpired"))
    assert _claims.sandbox_suspended(sandbox("False", suspended="True"))
    assert not _claims.sandbox_suspended(sandbox("False", suspended="False"))


def test_parse_time():
    assert _claims.parse_time("2026-12-04T08:08:03.503906051Z") == dt.datetime(2026, 12, 4, 8, 8, 3, 503906, tzinfo=dt.timezone.utc)
    assert _claims.parse_time("2026-12-04T09:08:03+01:00") == dt.datetime(2026, 12, 4, 8, 8, 3, tzinfo=dt.timezone.utc)
    assert _claims.parse_time("") is None


def test_claim_with_an_idle_policy():
    c = _claims.build_claim(namespace="ns", pool="p", suspend_after=600, now=NOW)
    assert c["spec"]["idlePolicy"] == {"suspendAfter": "600s"}
    c = _claims.build_claim(namespace="ns", pool="p", suspend_after=90.5,
                            idle_policy={"runningProcesses": "Ignore", "wake": "Manual"}, now=NOW)
    assert c["spec"]["idlePolicy"] == {"suspendAfter": "90.5s", "runningProcesses": "Ignore", "wake": "Manual"}
    c = _claims.build_claim(namespace="ns", pool="p", idle_policy={"suspendAfter": "1h30m"}, now=NOW)
    assert c["spec"]["idlePolicy"] == {"suspendAfter": "1h30m"}
    assert "idlePolicy" not in _claims.build_claim(namespace="ns", pool="p", now=NOW)["spec"]


@pytest.mark.parametrize("kw", [{"suspend_after": 10}, {"suspend_after": 8761 * 3600},
                                {"idle_policy": {"wake": "Manual"}}, {"idle_policy": {"suspend_after": "10m"}}])
def test_bad_idle_policies_are_refused(kw):
    with pytest.raises(ConfigError):
        _claims.build_claim(namespace="ns", pool="p", now=NOW, **kw)


def test_claim_with_egress():
    c = _claims.build_claim(namespace="ns", template="agent", allow_domains=["pypi.org", "*.pythonhosted.org", "pypi.org"],
                            deny_domains=("*.evil.test",), deny_cidrs=["192.0.2.0/24", "10.0.0.1/8", "2001:db8::/32"],
                            now=NOW)
    # Repeats are dropped (the API's lists are sets and refuse them); the order is the caller's.
    assert c["spec"]["egress"] == {"allowDomains": ["pypi.org", "*.pythonhosted.org"], "denyDomains": ["*.evil.test"],
                                   "denyCIDRs": ["192.0.2.0/24", "10.0.0.1/8", "2001:db8::/32"]}
    c = _claims.build_claim(namespace="ns", template="agent", deny_domains=["upload.pypi.org"], now=NOW)
    assert c["spec"]["egress"] == {"denyDomains": ["upload.pypi.org"]}
    for kw in ({}, {"allow_domains": [], "deny_domains": None, "deny_cidrs": []}):
        assert "egress" not in _claims.build_claim(namespace="ns", pool="p", now=NOW, **kw)["spec"]


def test_claim_from_a_snapshot():
    by_name = _claims.build_claim(namespace="ns", template="python", snapshot="numpy-loaded", now=NOW)
    assert by_name["spec"]["snapshotRef"] == {"name": "numpy-loaded"}
    snap = {"kind": "SandboxSnapshot", "metadata": {"name": "py-snap-x2k9q", "namespace": "ns"}}
    assert _claims.build_claim(namespace="ns", pool="p", snapshot=snap, now=NOW)["spec"]["snapshotRef"] == \
        {"name": "py-snap-x2k9q"}
    assert "snapshotRef" not in _claims.build_claim(namespace="ns", pool="p", now=NOW)["spec"]
    with pytest.raises(ConfigError, match="has no metadata.name"):
        _claims.build_claim(namespace="ns", pool="p", snapshot={"kind": "SandboxSnapshot"}, now=NOW)


@pytest.mark.parametrize("kw, bad", [
    ({"allow_domains": ["PyPI.org"]}, "'PyPI.org' is not a domain"),
    ({"allow_domains": ["https://pypi.org"]}, "'https://pypi.org' is not a domain"),
    ({"deny_domains": ["pypi.org\n"]}, "is not a domain"),
    ({"allow_domains": ["*"]}, "'*' is not a domain"),
    ({"allow_domains": ["api.*.test"]}, "is not a domain"),
    ({"allow_domains": ["-a.test"]}, "is not a domain"),
    ({"deny_domains": ["a" * 64 + ".test"]}, "is not a domain"),
    ({"deny_domains": [".".join(["a" * 63] * 4)]}, "is not a domain"),  # 255 characters
    ({"deny_domains": [7]}, "7 is not a domain"),
    ({"deny_cidrs": ["10.0.0.0"]}, "'10.0.0.0' is not a CIDR"),
    ({"deny_cidrs": ["10.0.0.0/33"]}, "is not a CIDR"),
    ({"deny_cidrs": ["10.0.0.0/08"]}, "is not a CIDR"),
    ({"deny_cidrs": ["10.0.0.0/255.0.0.0"]}, "is not a CIDR"),
    ({"deny_cidrs": ["010.0.0.0/8"]}, "is not a CIDR"),
    ({"deny_cidrs": ["2001:db8::/129"]}, "is not a CIDR"),
    ({"deny_cidrs": ["fe80::1%eth0/64"]}, "is not a CIDR"),
    ({"deny_cidrs": ["::ffff:192.0.2.0/120"]}, "is not a CIDR"),  # IPv4-mapped: CEL's isCIDR refuses it
    ({"deny_cidrs": ["evil.test/24"]}, "is not a CIDR"),
])
def test_bad_egress_is_refused_naming_the_value_and_the_fix(kw, bad):
    arg = next(iter(kw))
    with pytest.raises(ConfigError, match=re.escape(bad)) as e:
        _claims.build_claim(namespace="ns", pool="p", now=NOW, **kw)
    assert str(e.value).startswith(arg + ": ")
    assert ("such as pypi.org" if "domain" in bad else "such as 203.0.113.0/24") in str(e.value)


def test_egress_lists_are_lists_within_the_apis_bounds():
    with pytest.raises(ConfigError, match=re.escape("allow_domains must be a list of strings, not the string "
                                                    "'pypi.org': write allow_domains=['pypi.org']")):
        _claims.build_claim(namespace="ns", pool="p", allow_domains="pypi.org", now=NOW)
    ok = _claims.build_claim(namespace="ns", pool="p", allow_domains=[f"d{i}.test" for i in range(64)],
                             deny_cidrs=[f"10.0.{i}.0/24" for i in range(32)], now=NOW)
    assert len(ok["spec"]["egress"]["allowDomains"]) == 64 and len(ok["spec"]["egress"]["denyCIDRs"]) == 32
    with pytest.raises(ConfigError, match="allow_domains has 65 entries; a claim may give at most 64"):
        _claims.build_claim(namespace="ns", pool="p", allow_domains=[f"d{i}.test" for i in range(65)], now=NOW)
    with pytest.raises(ConfigError, match="deny_cidrs has 33 entries; a claim may give at most 32"):
        _claims.build_claim(namespace="ns", pool="p", deny_cidrs=[f"10.0.{i}.0/24" for i in range(33)], now=NOW)


def test_an_egress_rejected_claim_raises_with_the_controllers_message_and_the_fix():
    msg = ("spec.egress.allowDomains evil.test is not covered by SandboxTemplate agent's egress.allowDomains "
           "[pypi.org]: a claim may only narrow its template's egress; allow only names among or below those")
    with pytest.raises(ClaimFailedError) as e:
        _claims.claim_state(claim("False", "EgressRejected", message=msg))
    assert (e.value.reason, e.value.condition_message) == ("EgressRejected", msg)
    assert msg in str(e.value) and "pass allow_domains among or below" in str(e.value)


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBOX_ROUTER_URL", raising=False)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "team"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    return str(path)


class Created(Exception):
    """Raised by the stand-in API server's create, so that a claim stops before it waits."""


def record_creates(aio: AsyncClient) -> list:
    """The bodies of the objects ``aio`` creates from now on; each create raises Created."""
    created = []

    async def create(res, namespace, body):
        created.append(body)
        raise Created()

    aio._kube.create = create
    return created


EGRESS = {"allow_domains": ["pypi.org"], "deny_domains": ["upload.pypi.org"], "deny_cidrs": ["192.0.2.0/24"]}
WANT = {"allowDomains": ["pypi.org"], "denyDomains": ["upload.pypi.org"], "denyCIDRs": ["192.0.2.0/24"]}


def test_every_sync_claim_entry_point_sends_the_egress(kubeconfig):
    with Client(kubeconfig=kubeconfig, router_url="http://127.0.0.1:9") as c:
        created = record_creates(c.aio)
        for call in (c.create_claim, c.claim, lambda **kw: Sandbox.claim(client=c, **kw)):
            with pytest.raises(Created):
                call(pool="p", **EGRESS)
        assert [b["spec"].get("egress") for b in created] == [WANT] * 3
        # A bad value is refused before anything is sent.
        with pytest.raises(ConfigError, match="'PyPI.org' is not a domain"):
            c.claim(pool="p", allow_domains=["PyPI.org"])
        with pytest.raises(ConfigError, match="'10.0.0.0' is not a CIDR"):
            c.create_claim(pool="p", deny_cidrs=["10.0.0.0"])
        assert len(created) == 3


@pytest.mark.asyncio
async def test_every_async_claim_entry_point_sends_the_egress(kubeconfig):
    async with AsyncClient(kubeconfig=kubeconfig, router_url="http://127.0.0.1:9") as c:
        created = record_creates(c)
        for call in (c.create_claim, c.claim, lambda **kw: AsyncSandbox.claim(client=c, **kw)):
            with pytest.raises(Created):
                await call(pool="p", **EGRESS)
        assert [b["spec"].get("egress") for b in created] == [WANT] * 3
        with pytest.raises(ConfigError, match="'PyPI.org' is not a domain"):
            await c.claim(pool="p", allow_domains=["PyPI.org"])
        assert len(created) == 3


def test_fork_of_copies_the_spec_and_points_at_the_snapshot():
    src = {"metadata": {"namespace": "team-a", "name": "py", "uid": "u", "labels": {"agents.x-k8s.io/claim-uid": "c"}},
           "spec": {"operatingMode": "Suspended", "podTemplate": {"spec": {"containers": [{"name": "main"}]}}},
           "status": {"memory": {"snapshot": "own"}}}
    f = _claims.fork_of(src, "snap")
    assert f["metadata"] == {"namespace": "team-a", "generateName": "py-fork-", "labels": {"kubox.dev/fork-of": "py"}}
    assert f["spec"]["operatingMode"] == "Running" and f["spec"]["snapshotRef"] == {"name": "snap"}
    assert "status" not in f
    f["spec"]["podTemplate"]["spec"]["containers"][0]["name"] = "changed"
    assert src["spec"]["podTemplate"]["spec"]["containers"][0]["name"] == "main", "the fork shares the source's spec"
    long = "a" + "b" * 62
    assert len(_claims.generated_prefix(long, "-fork-")) == 58 and _claims.generated_prefix(long, "-fork-").startswith("ab")


def test_snapshot_taken():
    snap = {"metadata": {"namespace": "n", "name": "s"}, "status": {}}
    assert not _claims.snapshot_taken(snap)
    snap["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "SandboxNotRunning", "message": "later"}]}
    assert not _claims.snapshot_taken(snap)
    snap["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Taken"}], "snapshot": {"sizeBytes": 1}}
    assert _claims.snapshot_taken(snap)
    snap["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "CheckpointFailed", "message": "not gVisor"}]}
    with pytest.raises(kubox.SnapshotFailedError, match="SandboxSnapshot n/s: the snapshot could not be taken: not gVisor"):
        _claims.snapshot_taken(snap)
    assert _claims.snapshot_of("py", "n")["metadata"]["generateName"] == "py-snap-"
    assert "type" not in _claims.snapshot_of("py", "n")["spec"]
    assert _claims.snapshot_of("py", "n", filesystem_only=True)["spec"] == {"sandboxRef": {"name": "py"}, "type": "Filesystem"}
