"""What a SandboxClaim the SDK creates looks like, and how to read claims and sandboxes: pure
functions over the objects' JSON, shared by the sync and asyncio clients."""

from __future__ import annotations

import copy
import datetime as _dt
import ipaddress
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .errors import ClaimFailedError, ConfigError, SandboxNotReadyError, SnapshotFailedError

Obj = Dict[str, Any]

SANDBOX_GROUP = "agents.x-k8s.io"
EXTENSIONS_GROUP = "extensions.agents.x-k8s.io"
VERSION = "v1beta1"

#: metadata.generateName of the claims created without a name.
CLAIM_GENERATE_NAME = "kubox-"
#: The agents.x-k8s.io/created-by label's value on the claims this SDK creates: agent-sandbox's
#: value for its Python client, so that the controllers' metrics count them.
CREATED_BY = "python-client"
CREATED_BY_LABEL = "agents.x-k8s.io/created-by"
FIRST_REQUESTED_AT = "agents.x-k8s.io/client-first-requested-at"
AGENT_TOKEN_KEY = "token"

# The Ready reasons a claim does not leave by itself, with what to do about each.
_TERMINAL = {
    "WarmPoolNotFound": "",
    "TemplateNotFound": "",
    "InvalidMetadata": ("change pod_labels/pod_annotations to ones the template and the controller "
                        "allow"),
    "EnvVarsInjectionRejected": ("drop env=..., or allow the variables in the template's "
                                 "envVarsInjectionPolicy"),
    "VolumeClaimTemplatesError": ("change the claim's volumeClaimTemplates to ones the template's "
                                  "volumeClaimTemplatesPolicy allows"),
    "ClaimExpired": "claim a new sandbox (a longer ttl keeps it longer)",
    "SandboxExpired": "claim a new sandbox",
    "PodFailed": "read the Pod's logs (`kubectl logs`) and claim a new sandbox",
    "PodSucceeded": "the sandbox's main command exited; claim a new sandbox",
    "EgressRejected": ("a claim may only narrow its template's egress: pass allow_domains among or below the "
                       "template's spec.egress.allowDomains, or drop allow_domains/deny_domains/deny_cidrs when "
                       "the template has no spec.egress"),
}


def agent_secret_name(sandbox: str) -> str:
    """The Secret holding the agent token of a sandbox."""
    return sandbox + "-kubox-agent"


def build_claim(*, namespace: str, pool: Optional[str] = None, template: Optional[str] = None,
                name: Optional[str] = None, ttl: Optional[float] = None,
                env: Optional[Mapping[str, str]] = None, labels: Optional[Mapping[str, str]] = None,
                pod_labels: Optional[Mapping[str, str]] = None,
                pod_annotations: Optional[Mapping[str, str]] = None,
                suspend_after: Optional[float] = None, idle_policy: Optional[Mapping[str, str]] = None,
                allow_domains: Optional[Sequence[str]] = None, deny_domains: Optional[Sequence[str]] = None,
                deny_cidrs: Optional[Sequence[str]] = None, snapshot: Optional[SnapshotRef] = None,
                now: Optional[_dt.datetime] = None) -> Obj:
    """The SandboxClaim to create: from ``pool`` (spec.warmPoolRef) or ``template``
    (spec.sandboxTemplateRef), expiring ``ttl`` seconds from ``now`` (shutdownPolicy Delete),
    with spec.idlePolicy from ``suspend_after`` and ``idle_policy`` (see :func:`idle_policy_spec`),
    spec.egress from the egress lists (see :func:`egress_spec`) and spec.snapshotRef from
    ``snapshot`` (a SandboxSnapshot's name, or the object :meth:`Sandbox.snapshot` returns)."""
    if bool(pool) == bool(template):
        raise ConfigError("a claim needs exactly one source: pool=\"name\" (a SandboxWarmPool) or "
                          "template=\"name\" (a SandboxTemplate)")
    if ttl is not None and ttl <= 0:
        raise ConfigError(f"ttl must be positive seconds (or a timedelta), not {ttl!r}")
    now = now or _dt.datetime.now(_dt.timezone.utc)
    meta: Obj = {
        "namespace": namespace,
        "labels": {**(labels or {}), CREATED_BY_LABEL: CREATED_BY},
        "annotations": {FIRST_REQUESTED_AT: _rfc3339(now, nanos=True)},
    }
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = CLAIM_GENERATE_NAME
    spec: Obj = {}
    if pool:
        spec["warmPoolRef"] = {"name": pool}
    else:
        spec["sandboxTemplateRef"] = {"name": template}
    if ttl:
        at = (now + _dt.timedelta(seconds=ttl)).replace(microsecond=0)
        spec["lifecycle"] = {"shutdownTime": _rfc3339(at), "shutdownPolicy": "Delete"}
    if env:
        spec["env"] = [{"name": k, "value": str(env[k])} for k in sorted(env)]
    policy = idle_policy_spec(suspend_after, idle_policy)
    if policy:
        spec["idlePolicy"] = policy
    egress = egress_spec(allow_domains, deny_domains, deny_cidrs)
    if egress:
        spec["egress"] = egress
    if snapshot:
        spec["snapshotRef"] = {"name": snapshot_name(snapshot)}
    if pod_labels or pod_annotations:
        spec["additionalPodMetadata"] = {k: dict(v) for k, v in
                                         (("labels", pod_labels), ("annotations", pod_annotations)) if v}
    return {"apiVersion": f"{EXTENSIONS_GROUP}/{VERSION}", "kind": "SandboxClaim",
            "metadata": meta, "spec": spec}


#: A SandboxSnapshot as claims and forks take it: its name, or the object itself.
SnapshotRef = Union[str, Mapping[str, Any]]


def snapshot_name(snapshot: SnapshotRef) -> str:
    """The name of ``snapshot``, given by name or as the SandboxSnapshot object."""
    if isinstance(snapshot, str):
        return snapshot
    name = (snapshot.get("metadata") or {}).get("name")
    if not name:
        raise ConfigError("snapshot must be a SandboxSnapshot's name or the object Sandbox.snapshot() returns; "
                          f"this one has no metadata.name: {snapshot!r:.200}")
    return str(name)


#: The fields of spec.idlePolicy, and the bounds of its suspendAfter in seconds (the API's).
IDLE_POLICY_FIELDS = ("suspendAfter", "runningProcesses", "wake")
SUSPEND_AFTER_MIN, SUSPEND_AFTER_MAX = 30, 8760 * 3600


def idle_policy_spec(suspend_after: Optional[float], idle_policy: Optional[Mapping[str, str]]) -> Optional[Obj]:
    """spec.idlePolicy of a claim: ``idle_policy`` in the API's spelling (``suspendAfter`` as a
    Go duration such as "10m", ``runningProcesses`` KeepAwake or Ignore, ``wake`` OnRequest or
    Manual), with ``suspend_after`` (seconds) as its suspendAfter; None when neither is given."""
    if suspend_after is None and not idle_policy:
        return None
    policy: Obj = dict(idle_policy or {})
    unknown = sorted(set(policy) - set(IDLE_POLICY_FIELDS))
    if unknown:
        raise ConfigError(f"idle_policy has no field {', '.join(unknown)}; its fields are {', '.join(IDLE_POLICY_FIELDS)}")
    if suspend_after is not None:
        if not SUSPEND_AFTER_MIN <= suspend_after <= SUSPEND_AFTER_MAX:
            raise ConfigError(f"suspend_after must be between {SUSPEND_AFTER_MIN} seconds and 8760 hours, "
                              f"not {suspend_after!r}")
        policy["suspendAfter"] = go_duration(suspend_after)
    if not policy.get("suspendAfter"):
        raise ConfigError("an idle policy needs suspendAfter: pass suspend_after=seconds, or "
                          "idle_policy={\"suspendAfter\": \"10m\", ...}")
    return policy


#: The form of an egress domain and the bounds of spec.egress, as the API validates them
#: (EgressRestriction in api/v1beta1/egress_types.go): checked here so that a typo fails at once,
#: naming the argument, rather than as the API server's 422.
DOMAIN_PATTERN = re.compile(r"(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DOMAIN_MAX_LEN, MAX_DOMAINS, CIDR_MAX_LEN, MAX_CIDRS = 253, 64, 43, 32


def egress_spec(allow_domains: Optional[Sequence[str]], deny_domains: Optional[Sequence[str]],
                deny_cidrs: Optional[Sequence[str]]) -> Optional[Obj]:
    """spec.egress of a claim, which narrows its template's egress: ``allow_domains`` replace the
    template's (each must be covered by one of them, or the claim fails with EgressRejected),
    ``deny_domains`` and ``deny_cidrs`` are added. Repeats are dropped; None when all are empty."""
    egress: Obj = {}
    for field, arg, values, check, most in (
            ("allowDomains", "allow_domains", allow_domains, _check_domain, MAX_DOMAINS),
            ("denyDomains", "deny_domains", deny_domains, _check_domain, MAX_DOMAINS),
            ("denyCIDRs", "deny_cidrs", deny_cidrs, _check_cidr, MAX_CIDRS)):
        items = _egress_list(arg, values, check, most)
        if items:
            egress[field] = items
    return egress or None


def _egress_list(arg: str, values: Optional[Sequence[str]], check: Callable[[str, Any], None],
                 most: int) -> List[str]:
    """``values`` (the argument ``arg``) checked as the API would, at most ``most`` of them, without
    repeats (the API's lists are sets, which refuse them)."""
    if values is None:
        return []
    if isinstance(values, (str, bytes)):
        raise ConfigError(f"{arg} must be a list of strings, not the string {values!r}: write {arg}=[{values!r}]")
    items: List[str] = []
    for v in values:
        check(arg, v)
        if v not in items:
            items.append(v)
    if len(items) > most:
        raise ConfigError(f"{arg} has {len(items)} entries; a claim may give at most {most}")
    return items


def _check_domain(arg: str, d: Any) -> None:
    if isinstance(d, str) and len(d) <= DOMAIN_MAX_LEN and DOMAIN_PATTERN.fullmatch(d):
        return
    raise ConfigError(f"{arg}: {d!r} is not a domain: give a lowercase name such as pypi.org, or "
                      f"*.pythonhosted.org for the names below it")


def _check_cidr(arg: str, c: Any) -> None:
    if not (isinstance(c, str) and len(c) <= CIDR_MAX_LEN and _is_cidr(c)):
        raise ConfigError(f"{arg}: {c!r} is not a CIDR: give an address range such as 203.0.113.0/24 or "
                          f"2001:db8::/32")


def _is_cidr(c: str) -> bool:
    """Whether the API's CEL isCIDR (Go's netip.ParsePrefix) takes ``c``: an address and a decimal
    prefix length, host bits allowed, no IPv6 zone, no IPv4-mapped IPv6 address."""
    addr, _, bits = c.partition("/")
    if not re.fullmatch(r"0|[1-9][0-9]{0,2}", bits) or "%" in addr:
        return False
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    mapped = isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
    return int(bits) <= ip.max_prefixlen and not mapped


def go_duration(s: float) -> str:
    """Seconds as a Go duration: "600s", "90.5s"."""
    if s == int(s):
        return f"{int(s)}s"
    return f"{s:.3f}".rstrip("0") + "s"


def _rfc3339(t: _dt.datetime, nanos: bool = False) -> str:
    t = t.astimezone(_dt.timezone.utc)
    if nanos:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def name_of(obj: Obj) -> str:
    """``namespace/name`` of an object."""
    m = obj.get("metadata", {})
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def condition(obj: Obj, type_: str) -> Optional[Obj]:
    """The condition ``type_`` of an object's status, or None."""
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def current_condition(obj: Obj, type_: str) -> Optional[Obj]:
    """The condition ``type_`` when it was computed for the object's current generation."""
    c = condition(obj, type_)
    gen = obj.get("metadata", {}).get("generation")
    if c is None or c.get("observedGeneration") != gen:
        return None
    return c


def condition_text(obj: Obj) -> str:
    """The object's Ready condition, for a timeout message."""
    r = condition(obj, "Ready")
    if r is None:
        return "status: no Ready condition yet (is kubox-controller running?)"
    return f"Ready={r.get('status')} {r.get('reason', '')}: {r.get('message', '')}"


def claim_sandbox_name(claim: Obj) -> str:
    """The name of the claim's Sandbox (status.sandbox.name), or ""."""
    return (claim.get("status", {}).get("sandbox") or {}).get("name", "")


def claim_state(claim: Obj) -> bool:
    """True when the claim can be used (Ready, or its sandbox suspended), False while it is on
    its way; raises :class:`ClaimFailedError` when it failed for good. Only a status computed for
    the claim's generation counts."""
    gen = claim.get("metadata", {}).get("generation")
    r = condition(claim, "Ready")
    if r is None or claim.get("status", {}).get("observedGeneration") != gen or r.get("observedGeneration") != gen:
        return False
    has_sandbox = claim_sandbox_name(claim) != ""
    if r.get("status") == "True" and has_sandbox:
        return True
    if r.get("reason") == "SandboxSuspended" and has_sandbox:
        return True
    reason = r.get("reason", "")
    if r.get("status") != "False" or reason not in _TERMINAL:
        return False
    ns = claim["metadata"].get("namespace", "")
    fix = _TERMINAL[reason]
    if reason == "WarmPoolNotFound":
        pool = (claim.get("spec", {}).get("warmPoolRef") or {}).get("name", "")
        fix = (f'create SandboxWarmPool "{pool}" in namespace {ns}, or claim from a pool that exists '
               f"(`kubectl get sandboxwarmpools -n {ns}`)")
    elif reason == "TemplateNotFound":
        fix = (f"create the SandboxTemplate in namespace {ns}, or name one that exists "
               f"(`kubectl get sandboxtemplates -n {ns}`)")
    name = claim["metadata"].get("name", "")
    raise ClaimFailedError(f"SandboxClaim {ns}/{name} failed: {reason}: {r.get('message', '')}; {fix}",
                           namespace=ns, claim=name, reason=reason, condition_message=r.get("message", ""))


# The reasons of a Sandbox's Ready=False that it does not leave by itself (Go:
# sandboxv1beta1.SandboxTerminalReasons).
SANDBOX_TERMINAL = ("SandboxExpired", "PodFailed", "PodSucceeded")


def sandbox_ready(sb: Obj) -> bool:
    """True when the Sandbox is Ready with a Pod IP; raises :class:`SandboxNotReadyError` when it
    will not become Ready (expired, its Pod ended). Go: sandboxv1beta1.SandboxReadiness."""
    r = current_condition(sb, "Ready")
    if r is None:
        return False
    if r.get("status") == "True":
        return bool(sb.get("status", {}).get("podIPs"))
    if r.get("status") == "False" and r.get("reason") in SANDBOX_TERMINAL:
        raise SandboxNotReadyError(f"it will not become Ready: {r.get('reason')}: {r.get('message', '')}",
                                   object="Sandbox " + name_of(sb), hint="claim a new sandbox")
    return False


def sandbox_suspended(sb: Obj) -> bool:
    """True when the Sandbox's suspension is complete: Suspended=True, its Pod gone; raises
    :class:`SandboxNotReadyError` when it has expired, since an expired sandbox takes no
    operatingMode. Go: sandboxv1beta1.SandboxSuspension."""
    r = current_condition(sb, "Ready")
    if r is not None and r.get("status") == "False" and r.get("reason") == "SandboxExpired":
        raise SandboxNotReadyError(f"it will not be suspended: SandboxExpired: {r.get('message', '')}",
                                   object="Sandbox " + name_of(sb), hint="claim a new sandbox")
    s = current_condition(sb, "Suspended")
    return s is not None and s.get("status") == "True"


def is_suspended(sb: Obj) -> bool:
    """True when the Sandbox's spec asks for it to be suspended."""
    return sb.get("spec", {}).get("operatingMode") == "Suspended"


def parse_time(value: Optional[str]) -> Optional[_dt.datetime]:
    """An RFC 3339 time (with up to nanoseconds) as an aware UTC datetime, or None."""
    if not value:
        return None
    # Python keeps microseconds: drop the digits below them.
    value = re.sub(r"(\.\d{6})\d+", r"\1", value.replace("Z", "+00:00"))
    return _dt.datetime.fromisoformat(value).astimezone(_dt.timezone.utc)


#: The label on a fork: the source Sandbox's name (Go: sandboxv1beta1.ForkOfLabel).
FORK_OF_LABEL = "kubox.dev/fork-of"

# A generated name is the prefix and five random characters, within a name's 63.
_GENERATED_PREFIX_MAX = 63 - 5


def generated_prefix(name: str, suffix: str) -> str:
    """``name`` cut so that ``name + suffix`` and five random characters fit in 63 characters."""
    return name[:_GENERATED_PREFIX_MAX - len(suffix)] + suffix


def snapshot_of(sandbox: str, namespace: str, *, filesystem_only: bool = False) -> Obj:
    """A SandboxSnapshot of the Sandbox ``sandbox``, named after it by the API server; with
    ``filesystem_only``, of its files only (spec.type Filesystem)."""
    spec: Obj = {"sandboxRef": {"name": sandbox}}
    if filesystem_only:
        spec["type"] = "Filesystem"
    return {"apiVersion": f"{EXTENSIONS_GROUP}/{VERSION}", "kind": "SandboxSnapshot",
            "metadata": {"namespace": namespace, "generateName": generated_prefix(sandbox, "-snap-")},
            "spec": spec}


def snapshot_taken(snap: Obj) -> bool:
    """True once the SandboxSnapshot is Ready; SnapshotFailedError when it failed for good."""
    r = condition(snap, "Ready")
    if r is None:
        return False
    if r.get("status") == "True":
        return bool(snap.get("status", {}).get("snapshot"))
    if r.get("reason") == "CheckpointFailed":
        raise SnapshotFailedError(f"SandboxSnapshot {name_of(snap)}: the snapshot could not be taken: {r.get('message', '')}")
    return False


def fork_of(src: Obj, snapshot: str) -> Obj:
    """A new Sandbox that starts from the SandboxSnapshot ``snapshot`` taken of ``src``: src's
    spec, running, with spec.snapshotRef, a generated name and the fork-of label (Go:
    sandboxv1beta1.ForkOf)."""
    meta = src["metadata"]
    spec = copy.deepcopy(src["spec"])
    spec["operatingMode"] = "Running"
    spec["snapshotRef"] = {"name": snapshot}
    return {"apiVersion": f"{SANDBOX_GROUP}/{VERSION}", "kind": "Sandbox",
            "metadata": {"namespace": meta["namespace"], "generateName": generated_prefix(meta["name"], "-fork-"),
                         "labels": {FORK_OF_LABEL: meta["name"]}},
            "spec": spec}
