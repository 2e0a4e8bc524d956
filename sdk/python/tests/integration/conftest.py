"""Integration tests: the SDK against a real kube-apiserver and etcd, the kubox controllers, a
real kubox-router and real kubox-agents on loopback IPs, which the Go test
test/integration/pysdk (TestPythonSDK) starts and describes in KUBOX_TEST_* variables.

Run them with `go test ./test/integration/pysdk/` (or `make test-python`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from kubernetes import client as kclient
from kubernetes import config as kconfig


@dataclass
class Env:
    namespace: str
    router_url: str
    #: A Service in the namespace whose Pod reaches the router through a port-forward; the
    #: Service of the same name with "-down" names the same Pod on a port nothing listens on.
    router_service: str
    pool: str
    template: str
    pending_template: str
    noconnect_token: str
    custom: kclient.CustomObjectsApi

    def claims(self, label_selector: str = "") -> list:
        return self.custom.list_namespaced_custom_object(
            "extensions.agents.x-k8s.io", "v1beta1", self.namespace, "sandboxclaims",
            label_selector=label_selector)["items"]

    def claim(self, name: str):
        """The claim, or None when it is gone."""
        try:
            return self.custom.get_namespaced_custom_object(
                "extensions.agents.x-k8s.io", "v1beta1", self.namespace, "sandboxclaims", name)
        except kclient.ApiException as e:
            if e.status == 404:
                return None
            raise

    def being_deleted_or_gone(self, name: str) -> bool:
        c = self.claim(name)
        return c is None or bool(c["metadata"].get("deletionTimestamp"))


@pytest.fixture(scope="session")
def env() -> Env:
    missing = [k for k in ("KUBECONFIG", "KUBOX_TEST_NAMESPACE", "KUBOX_TEST_ROUTER_URL") if not os.environ.get(k)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not set: these tests run inside `go test ./test/integration/pysdk/`, "
                    "which starts the API server, kubox, the router and the agents", pytrace=False)
    api = kconfig.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    return Env(namespace=os.environ["KUBOX_TEST_NAMESPACE"], router_url=os.environ["KUBOX_TEST_ROUTER_URL"],
               router_service=os.environ["KUBOX_TEST_ROUTER_SERVICE"],
               pool=os.environ["KUBOX_TEST_POOL"], template=os.environ["KUBOX_TEST_TEMPLATE"],
               pending_template=os.environ["KUBOX_TEST_PENDING_TEMPLATE"],
               noconnect_token=os.environ["KUBOX_TEST_NOCONNECT_TOKEN"], custom=kclient.CustomObjectsApi(api))
