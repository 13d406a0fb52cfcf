"""The Argo stand-in fixture for every submit test in this folder, and no kubeconfig of the machine's."""

import pytest
from support.argo_standin import argo  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def no_kubeconfig(monkeypatch, tmp_path):
    """`submit` without ARGO_NAMESPACE reads the kubeconfig: never the machine's (~/.kube/config)."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
