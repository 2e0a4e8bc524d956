"""Port-forwarding to kubox-router through the API server, for programs outside the cluster with
only a kubeconfig: a listener on 127.0.0.1 whose every connection is forwarded (a WebSocket
port-forward of the Kubernetes Python client) to a ready Pod behind the router's Service."""

from __future__ import annotations

import socket
import threading
from typing import Any, List, Tuple

from kubernetes import client as kclient
from kubernetes.client.exceptions import ApiException
from kubernetes.stream.ws_client import ABNF, create_websocket

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
    """A local listener forwarding to a router Pod until :meth:`stop`. Each accepted connection
    gets a WebSocket port-forward of its own (``v4.channel.k8s.io``: channel 0 carries the data,
    channel 1 the errors), read and written by two threads with blocking calls: the Kubernetes
    client's own forwarder selects on the TLS socket and can stall on data OpenSSL has already
    buffered, which large answers hit."""

    def __init__(self, settings: KubeSettings, namespace: str, pod: str, port: int) -> None:
        self._settings = settings
        self._port = port
        self._ws_url = "ws" + settings.host[len("http"):] + \
            f"/api/v1/namespaces/{namespace}/pods/{pod}/portforward?ports={port}"
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
        pod, port = router_pod(kclient.CoreV1Api(api), kclient.DiscoveryV1Api(api), namespace, service)
        return cls(settings, namespace, pod, port)

    def alive(self) -> bool:
        """True while the listener accepts connections and the Pod answered the last one."""
        return not self._stopped.is_set()

    def stop(self) -> None:
        """Stops accepting and closes every forwarded connection."""
        self._stopped.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for c in self._conns:
                _close(c)
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
        ws, reader = None, None
        try:
            auth = self._settings.authorization()
            ws = create_websocket(self._settings.config, self._ws_url, {"authorization": auth} if auth else None)
            reader = threading.Thread(target=_from_pod, args=(ws, conn), name="kubox-port-forward-read", daemon=True)
            reader.start()
            while True:
                data = conn.recv(_BUF)
                if not data:
                    break
                ws.send_binary(b"\x00" + data)
        except Exception:  # noqa: BLE001 - the client sees its connection closed
            # The Pod may be gone: the next call starts a forward to a ready one.
            self._stopped.set()
        finally:
            if ws is not None:
                ws.close()  # ends the reader's wait
            if reader is not None:
                reader.join(timeout=5)
            _close(conn)
            with self._lock:
                self._conns.remove(conn)


def _from_pod(ws: Any, conn: socket.socket) -> None:
    """Copies the data channel of the WebSocket to the local connection until either ends."""
    seen = set()
    try:
        while True:
            opcode, frame = ws.recv_data_frame(True)
            if opcode == ABNF.OPCODE_CLOSE:
                return
            if opcode != ABNF.OPCODE_BINARY or not frame.data:
                continue
            channel, data = frame.data[0], frame.data[1:]
            if channel not in seen:  # each channel's first frame names the port
                seen.add(channel)
                continue
            if channel == 0:
                conn.sendall(data)
    except Exception:  # noqa: BLE001 - either side closed
        pass
    finally:
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
