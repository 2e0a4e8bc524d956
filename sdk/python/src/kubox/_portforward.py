"""Port-forwarding to kubox-router through the API server, for programs outside the cluster with
only a kubeconfig: a listener on 127.0.0.1 whose every connection is forwarded to a ready Pod
behind the router's Service, over a WebSocket to the Pod's ``portforward`` subresource that this
module opens itself (with websocket-client, and the TLS settings and credentials of the public
``kubernetes.client.Configuration``), speaking the ``v4.channel.k8s.io`` channel protocol."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

import websocket
from kubernetes import client as kclient
from kubernetes.client.exceptions import ApiException

from ._kubeconfig import KubeSettings
from .errors import ConfigError, SandboxConnectionError

_BUF = 1 << 16
#: The WebSocket subprotocol of the API server's (the kubelet's) port-forward: every binary
#: message starts with its channel's byte; for the one forwarded port, channel 0 carries the data
#: and channel 1 the errors, and each channel's first message is the port (2 bytes, little endian).
PROTOCOL = "v4.channel.k8s.io"
_DATA, _ERROR = 0, 1
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


def websocket_options(cfg: Any, authorization: Optional[str]) -> Dict[str, Any]:
    """websocket-client's connection options for the API server of the Kubernetes client's
    Configuration ``cfg``: its CA, client certificate, server name and proxy, and the
    ``Authorization`` header."""
    if cfg.verify_ssl:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        if cfg.assert_hostname is False:
            ctx.check_hostname = False
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    sslopt: Dict[str, Any] = {"context": ctx}
    server_name = getattr(cfg, "tls_server_name", None)
    if server_name:
        sslopt["server_hostname"] = server_name
    opts: Dict[str, Any] = {"subprotocols": [PROTOCOL], "sslopt": sslopt, "skip_utf8_validation": True,
                            "enable_multithread": True}
    if authorization:
        opts["header"] = [f"Authorization: {authorization}"]
    if cfg.proxy:
        proxy = urlsplit(cfg.proxy)
        opts.update(http_proxy_host=proxy.hostname, http_proxy_port=proxy.port,
                    proxy_type="http" if proxy.scheme in ("http", "https", "") else proxy.scheme)
        if proxy.username:
            opts["http_proxy_auth"] = (proxy.username, proxy.password or "")
        if cfg.no_proxy:
            opts["http_no_proxy"] = [h.strip() for h in str(cfg.no_proxy).split(",") if h.strip()]
    return opts


class PortForward:
    """A local listener forwarding to a router Pod until :meth:`stop`. Each accepted connection
    gets a WebSocket port-forward of its own (:data:`PROTOCOL`), read and written by two threads
    with blocking calls (selecting on the TLS socket could stall on data OpenSSL has already
    buffered, which large answers hit). An error the Pod's side reports ends the connection and
    the forward: the next call finds a ready Pod again."""

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
            ws = websocket.create_connection(self._ws_url, timeout=30,
                                             **websocket_options(self._settings.config, self._settings.authorization()))
            ws.settimeout(None)  # a forwarded connection lasts as long as its client keeps it
            reader = threading.Thread(target=self._from_pod, args=(ws, conn), name="kubox-port-forward-read",
                                      daemon=True)
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
                _close_ws(ws)  # ends the reader's wait
            if reader is not None:
                reader.join(timeout=5)
            _close(conn)
            with self._lock:
                self._conns.remove(conn)

    def _from_pod(self, ws: "websocket.WebSocket", conn: socket.socket) -> None:
        """Copies the data channel of the WebSocket to the local connection until either ends,
        or the Pod's side reports an error."""
        seen = set()
        try:
            while True:
                opcode, frame = ws.recv_data_frame(True)
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    return
                if opcode != websocket.ABNF.OPCODE_BINARY or not frame.data:
                    continue
                channel, data = frame.data[0], frame.data[1:]
                if channel not in seen:  # each channel's first message names the port
                    seen.add(channel)
                    if len(data) != 2 or struct.unpack("<H", data)[0] != self._port:
                        self._stopped.set()
                        return
                    continue
                if channel == _DATA:
                    conn.sendall(data)
                elif channel == _ERROR and data:
                    # e.g. "error forwarding port 8080 to pod ...: connection refused"
                    self._stopped.set()
                    return
        except Exception:  # noqa: BLE001 - either side closed
            pass
        finally:
            try:
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def _close_ws(ws: "websocket.WebSocket") -> None:
    """Closes the WebSocket without waiting for the other side's close message (the reader
    thread may be reading it)."""
    try:
        ws.send_close()
    except Exception:  # noqa: BLE001 - already closed
        pass
    ws.shutdown()


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
