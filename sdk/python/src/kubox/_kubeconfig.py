"""Finding the cluster: the kubeconfig (or the Pod's service account) as the Kubernetes Python
client loads it, turned into what the SDK's HTTP clients need."""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import yaml
from kubernetes import client as kclient
from kubernetes import config as kconfig
from kubernetes.config.config_exception import ConfigException

from .errors import ConfigError

#: The kubeconfig cluster extension in which ``kubox dev`` writes the router's URL.
ROUTER_EXTENSION = "kubox.dev/router"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def in_pod() -> bool:
    """True inside a Kubernetes Pod with a service account token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.exists(_SA_DIR + "/token"))


@dataclass
class KubeSettings:
    """How to reach and authenticate to the API server, from a kubeconfig or the Pod."""

    #: The API server's URL.
    host: str
    #: ``verify=`` for httpx: an SSL context with the cluster's CA, or False.
    verify: Union[ssl.SSLContext, bool]
    #: The client certificate and key files, when the kubeconfig uses one.
    cert: Optional[Tuple[str, str]]
    #: The namespace of the kubeconfig's context (or the Pod's), or "".
    namespace: str
    #: The router URL the kubeconfig's cluster carries in its kubox.dev/router extension, or "".
    router_url: str
    #: Returns the ``Authorization`` header value, refreshed when it expires; None without a token.
    authorization: Callable[[], Optional[str]] = field(repr=False, default=lambda: None)
    #: The Kubernetes client's configuration (used for port-forwarding).
    config: Any = field(repr=False, default=None)

    def bearer_token(self) -> Optional[str]:
        """The kubeconfig's bearer token (token, token file or exec plugin), without "Bearer "."""
        value = self.authorization()
        if not value:
            return None
        parts = value.split(" ", 1)
        return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else None


def load(kubeconfig: Optional[str] = None, context: Optional[str] = None) -> KubeSettings:
    """Loads the cluster's settings like client-go does: ``kubeconfig`` when given, else
    ``$KUBECONFIG``, else the Pod's service account inside a Pod, else ``~/.kube/config``."""
    cfg = kclient.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG", "")
    namespace, router_url = "", ""
    try:
        if not path and in_pod():
            kconfig.load_incluster_config(client_configuration=cfg)
            with open(_SA_DIR + "/namespace") as f:
                namespace = f.read().strip()
        else:
            path = path or os.path.expanduser("~/.kube/config")
            kconfig.load_kube_config(config_file=path, context=context, client_configuration=cfg,
                                     persist_config=False)
            namespace, router_url = _context_extras(path, context)
    except (ConfigException, OSError) as e:
        raise ConfigError(f"cannot load the cluster's configuration from {path or 'the Pod'}: {e}; "
                          "pass kubeconfig=..., set $KUBECONFIG, or run in a Pod with a service "
                          "account (after `make dev`: export KUBECONFIG=/var/lib/kubox-dev/kubeconfig)") from e
    verify: Union[ssl.SSLContext, bool] = False
    if cfg.verify_ssl:
        verify = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
    cert = (cfg.cert_file, cfg.key_file) if cfg.cert_file and cfg.key_file else None
    return KubeSettings(host=cfg.host.rstrip("/"), verify=verify, cert=cert, namespace=namespace,
                        router_url=router_url,
                        authorization=lambda: cfg.get_api_key_with_prefix("authorization"), config=cfg)


def _context_extras(path: str, context: Optional[str]) -> Tuple[str, str]:
    """The namespace of the (current or named) context and the router URL of its cluster's
    kubox.dev/router extension, read from the kubeconfig files in ``path`` (first wins)."""
    docs: List[Dict[str, Any]] = []
    for p in path.split(os.pathsep):
        if p:
            try:
                with open(os.path.expanduser(p)) as f:
                    docs.append(yaml.safe_load(f) or {})
            except OSError:
                continue
    current = context if context else next((str(d["current-context"]) for d in docs if d.get("current-context")), "")
    ctx = _named(docs, "contexts", current).get("context") or {}
    cluster = _named(docs, "clusters", ctx.get("cluster", "")).get("cluster") or {}
    router = ""
    for ext in cluster.get("extensions") or []:
        if ext.get("name") == ROUTER_EXTENSION and isinstance(ext.get("extension"), dict):
            router = str(ext["extension"].get("url") or "")
    return str(ctx.get("namespace") or ""), router


def _named(docs: List[Dict[str, Any]], key: str, name: str) -> Dict[str, Any]:
    for d in docs:
        for item in d.get(key) or []:
            if item.get("name") == name:
                return item
    return {}
