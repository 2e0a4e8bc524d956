"""Exceptions raised by the kubox SDK.

Every exception names the object it is about (``SandboxClaim team-a/kubox-x7k2p``,
``file /work/a in sandbox team-a/kubox-x7k2p``) and, where there is one, what to do about it.
Catch :class:`KuboxError` for all of them, or a subclass for one kind.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Mapping, Optional

__all__ = [
    "KuboxError",
    "ConfigError",
    "ClaimFailedError",
    "SandboxTimeoutError",
    "SandboxConnectionError",
    "CommandError",
    "APIError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "SandboxNotReadyError",
]


class KuboxError(Exception):
    """The base of every exception the SDK raises on purpose."""


class ConfigError(KuboxError, ValueError):
    """The SDK was given options it cannot work with (no kubeconfig, an unknown connection
    mode, a claim with neither pool nor template, ...). The message says which and how to fix it."""


class ClaimFailedError(KuboxError):
    """A SandboxClaim reached a state it will not leave by itself: its pool or template does not
    exist, its env, metadata or egress was rejected, it expired, or its Pod ended.

    The claim is deleted by :meth:`Sandbox.claim` before this is raised.
    """

    def __init__(self, message: str, *, namespace: str, claim: str, reason: str = "",
                 condition_message: str = "") -> None:
        super().__init__(message)
        #: Namespace of the claim.
        self.namespace = namespace
        #: Name of the claim.
        self.claim = claim
        #: The reason of the claim's Ready condition (``WarmPoolNotFound``, ``ClaimExpired``, ...).
        self.reason = reason
        #: The message of the claim's Ready condition.
        self.condition_message = condition_message


class SandboxTimeoutError(KuboxError, builtins.TimeoutError):
    """A claim or sandbox did not reach the state waited for within ``ready_timeout``, or the
    router answered 504 (its ``X-Sandbox-Timeout`` passed). The message gives the last condition
    seen."""

    def __init__(self, message: str, *, status: Optional[int] = None) -> None:
        super().__init__(message)
        #: The HTTP status (504) when the router answered; ``None`` for a wait that timed out.
        self.status = status


class SandboxConnectionError(KuboxError, builtins.ConnectionError):
    """The router or the sandbox's agent could not be reached (refused, reset, DNS)."""


class CommandError(KuboxError):
    """A command run with ``check=True`` exited with a non-zero status; ``result`` holds its
    output."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        #: The :class:`kubox.CommandResult` of the command.
        self.result = result


class APIError(KuboxError):
    """An error answered by kubox-router, kubox-agent or the Kubernetes API server: an HTTP
    status with a message, about an object.

    Its subclasses stand for the statuses a program handles: 401 :class:`UnauthorizedError`,
    403 :class:`ForbiddenError`, 404 :class:`NotFoundError`, 409 :class:`ConflictError`,
    503 :class:`SandboxNotReadyError`.
    """

    def __init__(self, status: int, message: str, *, object: str = "", code: str = "",
                 hint: str = "") -> None:
        #: The HTTP status (for the agent's Connect errors, the status of the code).
        self.status = status
        #: What the server said.
        self.message = message
        #: What the request was about, e.g. ``sandbox default/kubox-x7k2p``.
        self.object = object
        #: The agent's Connect code (``not_found``, ``failed_precondition``, ...) or the
        #: Kubernetes reason (``NotFound``, ``Forbidden``, ...); empty for the router's errors.
        self.code = code
        #: What to do about it; empty when there is nothing particular.
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.message or f"HTTP {self.status}"
        if self.object:
            text = f"{self.object}: {text}"
        text += f" (HTTP {self.status})"
        if self.hint:
            text += "; " + self.hint
        return text


class UnauthorizedError(APIError):
    """The router, the agent or the API server did not accept the credentials (HTTP 401)."""


class ForbiddenError(APIError):
    """The credentials were accepted but may not do this (HTTP 403); the message names the RBAC
    rule needed."""


class NotFoundError(APIError):
    """The claim, sandbox, process or file does not exist (HTTP 404)."""


class ConflictError(APIError):
    """The object exists already, or changed meanwhile (HTTP 409)."""


class SandboxNotReadyError(APIError):
    """The sandbox cannot take requests now: it is suspended or starting (no Pod IP), or it will
    not become Ready (expired, its Pod ended), or the router answered 503."""

    def __init__(self, message: str, *, object: str = "", status: int = 503, code: str = "",
                 hint: str = "") -> None:
        super().__init__(status, message, object=object, code=code, hint=hint)


class MemoryNotKeptError(KuboxError):
    """``suspend(keep_memory=True)`` suspended the sandbox without its memory (not gVisor, or
    kubox-node could not checkpoint it); the message is the controller's reason. The sandbox is
    suspended; its volumes are kept."""


class SnapshotFailedError(KuboxError):
    """``snapshot()`` or ``fork()`` could not snapshot the sandbox (not gVisor, or kubox-node is
    not configured or refused); the message is the controller's reason. No fork was started."""


# Hints for the statuses a caller can act on.
_HINTS = {
    401: ("the router accepts a Kubernetes bearer token (the kubeconfig's token or exec plugin, "
          "`kubectl create token`), a claim token (Client.mint_claim_token, `kubox token`) or its "
          "shared token: pass token=..."),
    403: ("the identity needs create on sandboxes/connect (agents.x-k8s.io) or sandboxclaims/connect "
          "(extensions.agents.x-k8s.io) for this object; see sdk/python/README.md#rbac"),
    502: ("the router could not reach the sandbox's agent; check that the sandbox's Pod runs "
          "kubox-agent (the template's spec.agent)"),
    503: ("the sandbox is not ready (suspended, starting, or its Pod has no IP); resume it or wait "
          "for Ready"),
}

# The HTTP status that stands for each Connect error code.
_CONNECT_STATUS = {
    "canceled": 499,
    "invalid_argument": 400,
    "out_of_range": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "aborted": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 412,
    "unimplemented": 501,
    "unavailable": 503,
    "unauthenticated": 401,
}

_CLASSES = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
}


def status_of_code(code: str) -> int:
    """The HTTP status of a Connect error code (500 for codes without one)."""
    return _CONNECT_STATUS.get(code, 500)


def api_error(status: int, message: str, *, object: str = "", code: str = "",
              hint: Optional[str] = None) -> KuboxError:
    """The exception for an error status: the subclass of :class:`APIError` that stands for it,
    or :class:`SandboxTimeoutError` for 504."""
    if hint is None:
        hint = _HINTS.get(status, "")
    if status == 504:
        text = f"{object}: {message or 'gateway timeout'} (HTTP 504)" if object else message
        return SandboxTimeoutError(text, status=504)
    if status == 503:
        return SandboxNotReadyError(message, object=object, code=code, hint=hint)
    cls = _CLASSES.get(status, APIError)
    return cls(status, message, object=object, code=code, hint=hint)


def error_from_body(status: int, body: bytes, object: str) -> KuboxError:
    """The exception for an error response of kubox-router (``{"error", "code"}``), kubox-agent
    (``{"code", "message"}``, a Connect error) or anything else (the body as text)."""
    try:
        doc = json.loads(body) if body else None
    except ValueError:
        doc = None
    if isinstance(doc, Mapping):
        if isinstance(doc.get("error"), str):
            return api_error(status, doc["error"], object=object)
        if isinstance(doc.get("message"), str) or isinstance(doc.get("code"), str):
            # The agent's Connect error: its code decides the status (the Connect protocol sends
            # failed_precondition, for one, as HTTP 400).
            code = str(doc.get("code") or "")
            if code in _CONNECT_STATUS:
                status = _CONNECT_STATUS[code]
            return api_error(status, str(doc.get("message") or code), object=object, code=code)
    return api_error(status, body.decode("utf-8", "replace").strip(), object=object)


def connect_error(err: Mapping[str, Any], object: str) -> KuboxError:
    """The exception for a Connect error object ``{"code", "message"}`` (end of a stream)."""
    code = str(err.get("code") or "unknown")
    return api_error(status_of_code(code), str(err.get("message") or code), object=object, code=code)


def kube_error(status: int, body: bytes, *, doing: str, object: str, rbac: str) -> KuboxError:
    """The exception for an error of the Kubernetes API (a Status object) while ``doing``
    something to ``object``; a 403 names the RBAC rule ``rbac`` needed."""
    try:
        doc = json.loads(body) if body else {}
    except ValueError:
        doc = {}
    if not isinstance(doc, Mapping):
        doc = {}
    message = str(doc.get("message") or body.decode("utf-8", "replace").strip() or f"HTTP {status}")
    reason = str(doc.get("reason") or "")
    hint = {
        401: "refresh the kubeconfig's credentials",
        403: f"the identity needs RBAC {rbac}",
    }.get(status, "")
    if status == 504 or reason == "Timeout":
        return SandboxTimeoutError(f"{doing} {object}: {message}", status=status)
    if status == 503:
        return APIError(status, f"{doing}: {message}", object=object, code=reason,
                        hint="the API server is unavailable; try again")
    return api_error(status, f"{doing}: {message}", object=object, code=reason, hint=hint)
