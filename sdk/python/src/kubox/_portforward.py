"""Port-forwarding to kubox-router through the API server, for programs outside the cluster with
only a kubeconfig: a listener on 127.0.0.1 whose every connection is forwarded (a WebSocket
port-forward of the Kubernetes Python client) to a ready Pod behind the router's Service."""

from __future__ import annotations

import select
import socket
import threading
from typing import Any, List, Tuple

from kubernetes import client as kclient
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward

from ._kubeconfig import KubeSettings
from .errors import ConfigError, SandboxConnectionError

_BUF = 1 << 16


def router_pod(core: Any, discovery: Any, namespace: str, service: str) -> Tuple[str, int]:
    """A ready Pod behind the Service and the port its router listens on, found through the
    Service's EndpointSlices."""
    what = f"Service {namespace}/{service}"
    try:
        svc = core.read_namespaced_service(service, namespace)
        slices = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}")
    except ApiException as e:
        raise ConfigError(f"port-forward to kubox-router: reading {what} and its EndpointSlices: {e.status} {e.reason}; "
                          f"the identity needs get on services and list on endpointslices (discovery.k8s.io) in "
                          f"{namespace}, or set router_url (or $KUBOX_ROUTER_URL) instead") from e
    ports = svc.spec.ports or []
    port_name = next((p.name for p in ports if p.port == 8080), ports[0].name if ports else None)
    for sl in slices.items:
        target = next((p.port for p in sl.ports or [] if p.name == port_name), None)
        for ep in sl.endpoints or []:
            ready = ep.conditions is None or ep.conditions.ready is not False
            if ready and target and ep.target_ref is not None and ep.target_ref.kind == "Pod":
                return ep.target_ref.name, int(target)
    raise SandboxConnectionError(f"port-forward to kubox-router: {what} has no ready Pod (is kubox installed? "
                                 f"`kubectl -n {namespace} get pods`)")


class PortForward:
    """A local listener forwarding to a router Pod until :meth:`stop`."""

    def __init__(self, core: Any, namespace: str, pod: str, port: int) -> None:
        self._core, self._ns, self._pod, self._port = core, namespace, pod, port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        #: The router's URL through the forward.
        self.url = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._conns: List[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="kubox-port-forward", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, settings: KubeSettings, namespace: str, service: str) -> "PortForward":
        """Finds a router Pod and starts forwarding to it."""
        api = kclient.ApiClient(settings.config)
        core, discovery = kclient.CoreV1Api(api), kclient.DiscoveryV1Api(api)
        pod, port = router_pod(core, discovery, namespace, service)
        return cls(core, namespace, pod, port)

    def alive(self) -> bool:
        """True while the listener accepts connections."""
        return not self._stopped.is_set()

    def stop(self) -> None:
        """Stops accepting and closes every forwarded connection."""
        self._stopped.set()
        self._listener.close()
        with self._lock:
            for c in self._conns:
                c.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="kubox-port-forward-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.append(conn)
        try:
            pf = portforward(self._core.connect_get_namespaced_pod_portforward, self._pod, self._ns,
                             ports=str(self._port))
            remote = pf.socket(self._port)
            _pipe(conn, remote)
            remote.close()
        except Exception:  # noqa: BLE001 - the client sees its connection closed
            # The Pod may be gone: the next call starts a forward to a ready one.
            self._stopped.set()
        finally:
            conn.close()
            with self._lock:
                self._conns.remove(conn)


def _pipe(a: socket.socket, b: Any) -> None:
    """Copies bytes both ways until either side closes."""
    peers = {a: b, b: a}
    while True:
        readable, _, _ = select.select(list(peers), [], [], 30)
        for s in readable:
            data = s.recv(_BUF)
            if not data:
                return
            peers[s].sendall(data)
