"""The SDK's copies of the contract and of the API's lifecycle rules, checked against the vectors
generated from api/ and the Go SDK (sdk/testdata/contract-vectors.json, `make vectors`): a key,
reason or claim field that drifts from its home fails here."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import inspect
import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from kubox import ClaimFailedError, Client, Sandbox, SandboxNotReadyError, _claims, _code, _kubeconfig, aio

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
    "defaultCodeOutputBytes": lambda: _code.DEFAULT_CODE_OUTPUT_BYTES,
    "defaultCodeResultBytes": lambda: _code.DEFAULT_CODE_RESULT_BYTES,
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
# build_claim's keywords that are not claim options.
NOT_OPTIONS = {"now"}


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


def build_claim_options() -> List[str]:
    """build_claim's keywords that are claim options."""
    return [k for k in inspect.signature(_claims.build_claim).parameters if k not in NOT_OPTIONS]


@pytest.mark.parametrize("keyword", build_claim_options())
def test_every_claim_option_has_a_case(keyword):
    options = [k for k, kw in CLAIM_OPTIONS.items() if kw == keyword]
    assert options, (f"build_claim's keyword {keyword!r} is not mapped onto the vectors' options: add it to "
                     "CLAIM_OPTIONS (and, when the Go SDK has no such option yet, the option and a case to "
                     "claimCases in hack/vectors/claims.go, then make vectors)")
    used = [c["name"] for c in VECTORS["buildClaim"]["cases"] if options[0] in c["options"]]
    assert used, (f"build_claim's keyword {keyword!r} (vectors' option {options[0]!r}) has no vector case: add a "
                  "case that sets it to claimCases in hack/vectors/claims.go, then make vectors")


@pytest.mark.parametrize("v", VECTORS["buildClaim"]["cases"], ids=lambda v: v["name"])
def test_build_claim(v):
    for option in v["options"]:
        assert option in CLAIM_OPTIONS, (f"case {v['name']!r}: option {option!r}: map it onto a build_claim "
                                          "keyword in CLAIM_OPTIONS (add the keyword when the SDK lacks it)")
        assert CLAIM_OPTIONS[option] in build_claim_options(), (
            f"case {v['name']!r}: option {option!r}: build_claim has no keyword {CLAIM_OPTIONS[option]!r} "
            f"(the Go SDK's: {', '.join(v['go'])}); add it to build_claim and to every claim method")
    kwargs = {CLAIM_OPTIONS[k]: val for k, val in v["options"].items()}
    kwargs.setdefault("namespace", VECTORS["buildClaim"]["namespace"])
    now = dt.datetime.fromisoformat(VECTORS["buildClaim"]["now"].replace("Z", "+00:00"))
    expected = copy.deepcopy(v["claim"])
    expected["metadata"]["labels"][_claims.CREATED_BY_LABEL] = _claims.CREATED_BY
    assert normalized(_claims.build_claim(now=now, **kwargs)) == normalized(expected)


class Built(Exception):
    """Raised by the recording build_claim: the call got that far, with these keywords."""

    def __init__(self, kwargs: Dict[str, Any]) -> None:
        super().__init__("built")
        self.kwargs = kwargs


def kubeconfig(tmp_path: Path) -> str:
    """A kubeconfig of a cluster and a router that are never reached (build_claim stops the call)."""
    cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True,
               "extensions": [{"name": "kubox.dev/router", "extension": {"url": "http://127.0.0.1:9"}}]}
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
           "clusters": [{"name": "c", "cluster": cluster}], "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
           "users": [{"name": "u", "user": {"token": "t0k"}}]}
    (tmp_path / "kubeconfig").write_text(json.dumps(doc))
    return str(tmp_path / "kubeconfig")


def _async_claim(cfg: str, method: str, **kwargs: Any) -> None:
    async def run() -> None:
        async with aio.AsyncClient(kubeconfig=cfg) as c:
            if method == "AsyncSandbox.claim":
                await aio.AsyncSandbox.claim(client=c, **kwargs)
            else:
                await getattr(c, method.split(".")[1])(**kwargs)
    asyncio.run(run())


def _sync_claim(cfg: str, method: str, **kwargs: Any) -> None:
    with Client(kubeconfig=cfg) as c:
        if method == "Sandbox.claim":
            Sandbox.claim(client=c, **kwargs)
        else:
            getattr(c, method.split(".")[1])(**kwargs)


# Every public way to claim, each of which must pass every claim option on to build_claim.
CLAIM_METHODS: Dict[str, Callable[..., None]] = {
    "AsyncClient.claim": _async_claim, "AsyncClient.create_claim": _async_claim, "AsyncSandbox.claim": _async_claim,
    "Client.claim": _sync_claim, "Client.create_claim": _sync_claim, "Sandbox.claim": _sync_claim,
}


@pytest.mark.parametrize("method", sorted(CLAIM_METHODS))
def test_every_claim_method_passes_every_option(method, tmp_path, monkeypatch):
    for k in ("KUBOX_ROUTER_URL", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(k, raising=False)

    def record(**kwargs: Any) -> Any:
        raise Built(kwargs)
    # A distinct value per option (numbers where the method converts seconds), so a swapped or
    # dropped option shows.
    values: Dict[str, Any] = {k: 60.0 + i for i, k in enumerate(build_claim_options())}
    values.update({k: f"value-of-{k}" for k in values if k not in ("ttl", "suspend_after")})
    monkeypatch.setattr(_claims, "build_claim", record)
    cfg = kubeconfig(tmp_path)
    with pytest.raises(Built) as built:
        CLAIM_METHODS[method](cfg, method, **values)
    missing = {k: v for k, v in values.items() if built.value.kwargs.get(k) != v}
    assert not missing, f"{method} does not pass these options on to build_claim as given: {sorted(missing)}"
