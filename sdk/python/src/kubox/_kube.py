"""The Kubernetes side of the SDK: reading, creating, patching, deleting and watching claims and
sandboxes over the API server's REST API with httpx (asyncio), authenticated as the kubeconfig
says."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional
from urllib.parse import quote

import httpx

from ._claims import EXTENSIONS_GROUP, SANDBOX_GROUP, VERSION, Obj
from ._kubeconfig import KubeSettings
from .errors import NotFoundError, SandboxConnectionError, kube_error


@dataclass(frozen=True)
class Resource:
    """A kind of object the SDK reads or writes."""

    group: str
    version: str
    plural: str
    kind: str

    def path(self, namespace: str, name: str = "") -> str:
        """The REST path of the collection in ``namespace``, or of the object ``name`` in it."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        p = f"{prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return p + "/" + quote(name, safe="") if name else p

    def rbac(self, verb: str, namespace: str) -> str:
        """The RBAC rule that allows ``verb`` in ``namespace``, for error messages."""
        group = f" ({self.group})" if self.group else ""
        return f"{verb} on {self.plural}{group} in {namespace}"


CLAIMS = Resource(EXTENSIONS_GROUP, VERSION, "sandboxclaims", "SandboxClaim")
SANDBOXES = Resource(SANDBOX_GROUP, VERSION, "sandboxes", "Sandbox")
SECRETS = Resource("", "v1", "secrets", "Secret")
SNAPSHOTS = Resource(EXTENSIONS_GROUP, VERSION, "sandboxsnapshots", "SandboxSnapshot")

# A watch asks the server to end it after about this long (jittered), and is then reopened from
# the last version seen, so that a connection a proxy silently dropped does not hang a wait.
_WATCH_SECONDS = 240

#: check(obj, deleted) of watch_until: True to stop, False to go on; raising ends the wait.
Check = Callable[[Obj, bool], bool]


class Kube:
    """An asyncio client of the objects the SDK uses."""

    def __init__(self, settings: KubeSettings) -> None:
        self.settings = settings
        self._http = httpx.AsyncClient(
            base_url=settings.host, verify=settings.verify, cert=settings.cert,
            timeout=httpx.Timeout(30.0, read=None), headers={"User-Agent": "kubox-python"})

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    def _headers(self, content_type: Optional[str] = None) -> Dict[str, str]:
        h = {"Accept": "application/json"}
        auth = self.settings.authorization()
        if auth:
            h["Authorization"] = auth
        if content_type:
            h["Content-Type"] = content_type
        return h

    async def request(self, method: str, res: Resource, namespace: str, name: str = "", *,
                      body: Any = None, params: Optional[Dict[str, str]] = None,
                      content_type: str = "application/json", doing: str, verb: str) -> Obj:
        """Sends one request and returns the answer's object; an error status raises the SDK's
        exception, naming ``doing``, the object and the RBAC ``verb`` it needs."""
        obj = f"{res.kind} {namespace}/{name}" if name else f"{res.plural} in namespace {namespace}"
        try:
            resp = await self._http.request(
                method, res.path(namespace, name), params=params,
                content=None if body is None else json.dumps(body).encode(),
                headers=self._headers(content_type if body is not None else None))
        except httpx.HTTPError as e:
            raise SandboxConnectionError(f"{doing} {obj}: cannot reach the API server {self.settings.host}: {e}") from e
        if resp.status_code >= 400:
            raise kube_error(resp.status_code, resp.content, doing=doing, object=obj, rbac=res.rbac(verb, namespace))
        return resp.json()

    async def get(self, res: Resource, namespace: str, name: str) -> Obj:
        """Reads one object."""
        return await self.request("GET", res, namespace, name, doing="reading", verb="get")

    async def create(self, res: Resource, namespace: str, body: Obj) -> Obj:
        """Creates an object and returns it as created."""
        return await self.request("POST", res, namespace, body=body, doing="creating", verb="create")

    async def merge_patch(self, res: Resource, namespace: str, name: str, patch: Obj) -> Obj:
        """Applies a JSON merge patch to an object and returns the result."""
        return await self.request("PATCH", res, namespace, name, body=patch,
                                  content_type="application/merge-patch+json", doing="patching", verb="patch")

    async def delete(self, res: Resource, namespace: str, name: str) -> bool:
        """Deletes an object with background propagation; False when it was gone already."""
        try:
            await self.request("DELETE", res, namespace, name, doing="deleting", verb="delete",
                               body={"kind": "DeleteOptions", "apiVersion": "v1",
                                     "propagationPolicy": "Background"})
        except NotFoundError:
            return False
        return True

    async def watch_until(self, res: Resource, obj: Obj, check: Check) -> Obj:
        """Calls ``check`` with ``obj`` and then with every later version of it, followed with
        one watch from ``obj``'s resourceVersion, until ``check`` returns True (the version it
        accepted is returned) or raises. A watch the server ends is reopened from the last
        version seen; one whose version expired (410) goes on from a fresh read. Nothing is
        polled."""
        if check(obj, False):
            return obj
        meta = obj["metadata"]
        ns, name = meta["namespace"], meta["name"]
        rv = meta.get("resourceVersion", "")
        while True:
            outcome = await self._follow(res, ns, name, rv, check)
            if isinstance(outcome, dict):
                return outcome
            if outcome:
                rv = outcome
                continue
            # The version expired: read the object again and go on from there.
            try:
                fresh = await self.get(res, ns, name)
            except NotFoundError:
                check(obj, True)
                raise
            if check(fresh, False):
                return fresh
            rv = fresh["metadata"].get("resourceVersion", "")

    async def _follow(self, res: Resource, ns: str, name: str, rv: str, check: Check) -> Any:
        """One watch from ``rv``: returns the accepted object, or the last resourceVersion seen
        when the watch ended without one ("" when ``rv`` expired)."""
        params = {"watch": "true", "fieldSelector": f"metadata.name={name}", "resourceVersion": rv,
                  "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(_WATCH_SECONDS + random.randint(0, 60))}
        obj = f"{res.kind} {ns}/{name}"
        try:
            async with self._http.stream("GET", res.path(ns), params=params, headers=self._headers()) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise kube_error(resp.status_code, resp.content, doing="watching", object=obj,
                                     rbac=res.rbac("watch", ns))
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    typ, o = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        if o.get("code") == 410 or o.get("reason") in ("Expired", "Gone"):
                            return ""
                        raise kube_error(int(o.get("code") or 500), json.dumps(o).encode(), doing="watching",
                                         object=obj, rbac=res.rbac("watch", ns))
                    rv = o.get("metadata", {}).get("resourceVersion", rv)
                    if typ in ("ADDED", "MODIFIED", "DELETED") and check(o, typ == "DELETED"):
                        return o
        except (httpx.RemoteProtocolError, httpx.ReadError):
            pass  # the connection broke: reopen from rv
        except httpx.HTTPError as e:
            raise SandboxConnectionError(f"watching {obj}: cannot reach the API server {self.settings.host}: {e}") from e
        return rv

