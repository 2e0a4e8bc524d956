"""Client settings: kubeconfig, namespace, router URL and connection mode (no server)."""

from __future__ import annotations

import pytest
import yaml

import kubox
from kubox import Client


def kubeconfig(tmp_path, *, namespace=None, router=None, token="t0k"):
    cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    if router:
        cluster["extensions"] = [{"name": "kubox.dev/router", "extension": {"url": router}}]
    ctx = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
           "clusters": [{"name": "c", "cluster": cluster}], "contexts": [{"name": "x", "context": ctx}],
           "users": [{"name": "u", "user": {"token": token} if token else {}}]}
    p = tmp_path / "kubeconfig"
    p.write_text(yaml.safe_dump(doc))
    return str(p)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for k in ("KUBOX_ROUTER_URL", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(k, raising=False)


def test_router_url_and_namespace_from_the_kubeconfig(tmp_path):
    with Client(kubeconfig=kubeconfig(tmp_path, namespace="team-a", router="http://127.0.0.1:16090/")) as c:
        assert (c.connection, c.aio.router_url, c.namespace) == ("router", "http://127.0.0.1:16090", "team-a")


def test_the_environment_wins_over_the_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBOX_ROUTER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, router="http://127.0.0.1:2"))
    with Client(namespace="mine") as c:
        assert (c.aio.router_url, c.namespace) == ("http://127.0.0.1:1", "mine")


def test_without_a_router_url_auto_port_forwards(tmp_path):
    with Client(kubeconfig=kubeconfig(tmp_path)) as c:
        assert c.connection == "port-forward" and c.namespace == "default"


def test_bad_settings_are_refused(tmp_path):
    cfg = kubeconfig(tmp_path)
    with pytest.raises(kubox.ConfigError, match="unknown connection"):
        Client(kubeconfig=cfg, connection="carrier-pigeon")
    with pytest.raises(kubox.ConfigError, match="needs router_url"):
        Client(kubeconfig=cfg, connection="router")
    with pytest.raises(kubox.ConfigError, match="KUBECONFIG"):
        Client(kubeconfig=str(tmp_path / "missing"))


def test_a_certificate_only_kubeconfig_says_how_to_get_a_token(tmp_path):
    with Client(kubeconfig=kubeconfig(tmp_path, router="http://127.0.0.1:9", token=None)) as c:
        with pytest.raises(kubox.UnauthorizedError, match="kubectl create token"):
            c.mint_claim_token("any")


def test_inside_a_pod_auto_uses_the_routers_service(tmp_path, monkeypatch):
    monkeypatch.setattr("kubox._kubeconfig.in_pod", lambda: True)
    with Client(kubeconfig=kubeconfig(tmp_path), router_namespace="infra") as c:
        assert (c.connection, c.aio.router_url) == ("router", "http://sandbox-router-svc.infra.svc:8080")
