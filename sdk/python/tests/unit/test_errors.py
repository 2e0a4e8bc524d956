"""Error answers become exceptions that name the object and say what to do (no server)."""

from __future__ import annotations

import json

import pytest

import kubox
from kubox import errors


def test_router_errors():
    e = errors.error_from_body(404, json.dumps({"error": "sandbox ns/x not found", "code": 404}).encode(), "sandbox ns/x")
    assert isinstance(e, kubox.NotFoundError) and e.status == 404 and e.message == "sandbox ns/x not found"
    e = errors.error_from_body(403, b'{"error":"no","code":403}', "sandbox ns/x")
    assert isinstance(e, kubox.ForbiddenError) and "sandboxes/connect" in str(e)
    e = errors.error_from_body(503, b'{"error":"no pod ip","code":503}', "sandbox ns/x")
    assert isinstance(e, kubox.SandboxNotReadyError) and "resume it" in str(e)
    e = errors.error_from_body(504, b'{"error":"slow","code":504}', "sandbox ns/x")
    assert isinstance(e, kubox.SandboxTimeoutError) and isinstance(e, TimeoutError) and e.status == 504


def test_agent_errors_keep_the_connect_code():
    e = errors.error_from_body(404, b'{"code":"not_found","message":"stat /x: no such file"}', "file /x in sandbox ns/s")
    assert isinstance(e, kubox.NotFoundError) and e.code == "not_found"
    assert str(e) == "file /x in sandbox ns/s: stat /x: no such file (HTTP 404)"
    e = errors.connect_error({"code": "failed_precondition", "message": "exited"}, "process p")
    assert type(e) is kubox.APIError and e.status == 412 and e.code == "failed_precondition"


def test_plain_bodies():
    e = errors.error_from_body(500, b"  boom \n", "x")
    assert type(e) is kubox.APIError and e.message == "boom"


def test_kubernetes_errors_name_the_rbac_rule():
    body = json.dumps({"kind": "Status", "reason": "Forbidden", "message": "cannot create", "code": 403}).encode()
    e = errors.kube_error(403, body, doing="creating", object="SandboxClaim ns/c", rbac="create on sandboxclaims in ns")
    assert isinstance(e, kubox.ForbiddenError) and e.code == "Forbidden"
    assert "the identity needs RBAC create on sandboxclaims in ns" in str(e) and "SandboxClaim ns/c" in str(e)
    e = errors.kube_error(503, b"{}", doing="reading", object="x", rbac="")
    assert type(e) is kubox.APIError


@pytest.mark.parametrize("cls", [kubox.NotFoundError, kubox.ForbiddenError, kubox.UnauthorizedError,
                                 kubox.SandboxNotReadyError, kubox.ConflictError])
def test_every_api_error_is_a_kubox_error(cls):
    assert issubclass(cls, kubox.APIError) and issubclass(cls, kubox.KuboxError)


def test_a_connect_code_decides_the_status():
    # The Connect protocol answers failed_precondition with HTTP 400; the SDK reports 412, as
    # the Go SDK does.
    e = errors.error_from_body(400, b'{"code":"failed_precondition","message":"exited"}', "process p")
    assert e.status == 412 and e.code == "failed_precondition"
