"""The SandboxClaim the SDK creates and how it reads claims and sandboxes (no server)."""

from __future__ import annotations

import datetime as dt

import pytest

from kubox import ClaimFailedError, ConfigError, SandboxNotReadyError
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
