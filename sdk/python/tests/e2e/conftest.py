"""End-to-end tests on the local environment (`make dev`): a real node, gVisor sandboxes from
the sample python pool, kubox installed in the cluster. The Go test TestPythonSDK in test/e2e
(`make test-e2e`) creates a namespace with a ready pool and runs these with KUBECONFIG and
KUBOX_TEST_NAMESPACE set."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def namespace() -> str:
    ns = os.environ.get("KUBOX_TEST_NAMESPACE")
    if not ns or not os.environ.get("KUBECONFIG"):
        pytest.fail("KUBECONFIG and KUBOX_TEST_NAMESPACE are not set: run these through `make test-e2e` "
                    "(TestPythonSDK), which brings up the local environment and a warm python pool", pytrace=False)
    return ns
