"""The port-forward's WebSocket options come from the public kubernetes.client.Configuration."""

from __future__ import annotations

import ssl

from kubernetes import client as kclient

from kubox._portforward import PROTOCOL, websocket_options


def test_options_verify_the_server_and_send_the_credentials():
    cfg = kclient.Configuration()
    cfg.host, cfg.verify_ssl = "https://127.0.0.1:6443", True
    opts = websocket_options(cfg, "Bearer t0k")
    ctx = opts["sslopt"]["context"]
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert opts["subprotocols"] == [PROTOCOL] == ["v4.channel.k8s.io"]
    assert opts["header"] == ["Authorization: Bearer t0k"] and "http_proxy_host" not in opts


def test_options_without_verification_through_a_proxy():
    cfg = kclient.Configuration()
    cfg.verify_ssl, cfg.proxy, cfg.no_proxy = False, "http://user:pw@proxy.local:3128", "10.0.0.1, .svc"
    opts = websocket_options(cfg, None)
    ctx = opts["sslopt"]["context"]
    assert ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname and "header" not in opts
    assert (opts["http_proxy_host"], opts["http_proxy_port"]) == ("proxy.local", 3128)
    assert opts["http_proxy_auth"] == ("user", "pw")
    assert opts["http_no_proxy"] == ["10.0.0.1", ".svc"] and opts["proxy_type"] == "http"
