"""The SDK's copies of the contract and of the API's lifecycle rules, checked against the vectors
generated from api/ and the Go SDK (sdk/testdata/contract-vectors.json, `make vectors`): a key,
reason or claim field that drifts from its home fails here."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from kubox import ClaimFailedError, SandboxNotReadyError, _claims, _kubeconfig, aio

VECTORS = json.loads((Path(__file__).resolve().parents[3] / "testdata" / "contract-vectors.json").read_text())

# Each vector constant and the SDK's copy of it.
CONSTANTS: Dict[str, Callable[[], Any]] = {
    "sandboxGroup": lambda: _claims.SANDBOX_GROUP,
    "extensionsGroup": lambda: _claims.EXTENSIONS_GROUP,
    "version": lambda: _claims.VERSION,
    "createdByLabel": lambda: _claims.CREATED_BY_LABEL,
    "createdByPython": lambda: _claims.CREATED_BY,
    "clientFirstRequestedAtAnnotation": lambda: _claims.FIRST_REQUESTED_AT,
    "forkOfLabel": lambda: _claims.FORK_OF_LABEL,
    "claimGenerateName": lambda: _claims.CLAIM_GENERATE_NAME,
    "agentTokenSecretKey": lambda: _claims.AGENT_TOKEN_KEY,
    "agentSecretName": lambda: {"sandbox": "python-x7k2q", "secret": _claims.agent_secret_name("python-x7k2q")},
    "defaultRouterPort": lambda: aio.DEFAULT_ROUTER_PORT,
    "defaultRouterNamespace": lambda: aio.DEFAULT_ROUTER_NAMESPACE,
    "defaultRouterService": lambda: aio.DEFAULT_ROUTER_SERVICE,
    "routerURLEnv": lambda: aio.ROUTER_URL_ENV,
    "routerKubeconfigExtension": lambda: _kubeconfig.ROUTER_EXTENSION,
}
# The vector constants this SDK has no copy of (another SDK's value, or a key it does not use).
NOT_RETYPED = {"createdByTypeScript", "defaultAgentPort", "authorizationHeader", "bearerScheme"}

# The vectors' neutral claim options and build_claim's keywords (Go: FromPool, FromTemplate,
# WithName, InNamespace, WithTTL, WithEnv, WithLabels, WithPodLabels, WithPodAnnotations,
# WithSuspendAfter, WithIdlePolicy, WithAllowDomains, WithEgress, WithSnapshot).
CLAIM_OPTIONS = {
    "pool": "pool", "template": "template", "name": "name", "namespace": "namespace",
    "ttlSeconds": "ttl", "env": "env", "labels": "labels", "podLabels": "pod_labels",
    "podAnnotations": "pod_annotations", "suspendAfterSeconds": "suspend_after", "idlePolicy": "idle_policy",
    "allowDomains": "allow_domains", "denyDomains": "deny_domains", "denyCIDRs": "deny_cidrs", "snapshot": "snapshot",
}


def test_every_constant_is_checked():
    assert set(VECTORS["constants"]) == set(CONSTANTS) | NOT_RETYPED


@pytest.mark.parametrize("key", sorted(CONSTANTS))
def test_constant(key):
    assert CONSTANTS[key]() == VECTORS["constants"][key], f"{key}: the SDK's copy differs from api/"


def test_terminal_reasons():
    assert sorted(_claims._TERMINAL) == sorted(VECTORS["claimTerminalReasons"])
    assert sorted(_claims.SANDBOX_TERMINAL) == sorted(VECTORS["sandboxTerminalReasons"])


def outcome(fn: Callable[[Dict[str, Any]], bool], obj: Dict[str, Any], ok: str) -> List[str]:
    """What fn says of obj, as the vectors write it: [ok], ["waiting"] or ["terminal", reason]."""
    try:
        return [ok] if fn(copy.deepcopy(obj)) else ["waiting"]
    except ClaimFailedError as e:
        return ["terminal", e.reason]
    except SandboxNotReadyError as e:
        reasons = [r for r in VECTORS["sandboxTerminalReasons"] if f": {r}: " in str(e)]
        return ["terminal", *reasons]


def want(v: Dict[str, Any]) -> List[str]:
    return [v["want"], v["reason"]] if "reason" in v else [v["want"]]


@pytest.mark.parametrize("v", VECTORS["claimReadiness"], ids=lambda v: v["name"])
def test_claim_readiness(v):
    assert outcome(_claims.claim_state, v["object"], "ready") == want(v)


@pytest.mark.parametrize("v", VECTORS["sandboxReadiness"], ids=lambda v: v["name"])
def test_sandbox_readiness(v):
    assert outcome(_claims.sandbox_ready, v["object"], "ready") == want(v)


@pytest.mark.parametrize("v", VECTORS["sandboxSuspension"], ids=lambda v: v["name"])
def test_sandbox_suspension(v):
    assert outcome(_claims.sandbox_suspended, v["object"], "done") == want(v)


def go_duration_seconds(s: str) -> float:
    """A Go duration ("1h30m0s", "600s", "1.5s") in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    parts = re.findall(r"([0-9.]+)(ms|h|m|s)", s)
    assert parts and "".join(n + u for n, u in parts) == s, f"{s!r} is not a Go duration"
    return sum(float(n) * units[u] for n, u in parts)


def normalized(claim: Dict[str, Any]) -> Dict[str, Any]:
    """claim with its times as instants and its durations as seconds (vectors' instants, durations)."""
    out = copy.deepcopy(claim)
    for paths, parse in ((VECTORS["buildClaim"]["instants"], _claims.parse_time),
                         (VECTORS["buildClaim"]["durations"], go_duration_seconds)):
        for path in paths:
            node = out
            for key in path[:-1]:
                node = node.get(key, {})
            if path[-1] in node:
                node[path[-1]] = parse(node[path[-1]])
    return out


@pytest.mark.parametrize("v", VECTORS["buildClaim"]["cases"], ids=lambda v: v["name"])
def test_build_claim(v):
    unknown = set(v["options"]) - set(CLAIM_OPTIONS)
    assert not unknown, f"map the vectors' options {unknown} onto build_claim's keywords in CLAIM_OPTIONS"
    kwargs = {CLAIM_OPTIONS[k]: val for k, val in v["options"].items()}
    kwargs.setdefault("namespace", VECTORS["buildClaim"]["namespace"])
    now = dt.datetime.fromisoformat(VECTORS["buildClaim"]["now"].replace("Z", "+00:00"))
    expected = copy.deepcopy(v["claim"])
    expected["metadata"]["labels"][_claims.CREATED_BY_LABEL] = _claims.CREATED_BY
    assert normalized(_claims.build_claim(now=now, **kwargs)) == normalized(expected)
