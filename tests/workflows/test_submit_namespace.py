"""Without ARGO_NAMESPACE (or -n), `submit` goes to the current kube context's namespace, read from the kubeconfig."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from support.argo_standin import CI_RUN, foxhunt, refused

from foxhunt_workflows.kubeconfig import context_namespace


def kubeconfig(path: Path, current: str | None, contexts: dict[str, str | None]) -> Path:
    """A kubeconfig file with these contexts (name → namespace, None: no namespace) and current context."""
    entries = [
        {"name": name, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
        for name, ns in contexts.items()
    ]
    document = {"apiVersion": "v1", "kind": "Config", "contexts": entries}
    if current is not None:
        document["current-context"] = current
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_current_contexts_namespace(tmp_path):
    config = kubeconfig(tmp_path / "config", "lab", {"prod": "ml-prod", "lab": "ml-lab"})

    assert context_namespace({"KUBECONFIG": str(config)}) == ("ml-lab", "kube context 'lab' namespace")


def test_without_kubeconfig_the_file_is_kube_config_in_home(tmp_path):
    (tmp_path / ".kube").mkdir()
    kubeconfig(tmp_path / ".kube" / "config", "lab", {"lab": "ml-lab"})

    assert context_namespace({}, home=tmp_path)[0] == "ml-lab"


def test_the_first_file_that_sets_a_current_context_wins(tmp_path):
    first = kubeconfig(tmp_path / "a", None, {"lab": "from-a"})
    second = kubeconfig(tmp_path / "b", "lab", {"lab": "from-b"})
    third = kubeconfig(tmp_path / "c", "other", {"other": "from-c"})
    listed = os.pathsep.join(str(p) for p in (tmp_path / "missing", first, second, third))

    # current-context from b (a sets none); the context's first definition is a's, as kubectl merges.
    assert context_namespace({"KUBECONFIG": listed}) == ("from-a", "kube context 'lab' namespace")


@pytest.mark.parametrize(
    ("current", "contexts"),
    [(None, {"lab": "ml"}), ("lab", {"lab": None}), ("gone", {"lab": "ml"})],
    ids=["no current context", "context without namespace", "current context undefined"],
)
def test_the_namespace_is_default_when_the_context_names_none(tmp_path, current, contexts):
    config = kubeconfig(tmp_path / "config", current, contexts)

    assert context_namespace({"KUBECONFIG": str(config)})[0] == "default"


def test_the_namespace_is_default_without_any_kubeconfig(tmp_path):
    assert context_namespace({"KUBECONFIG": str(tmp_path / "none")})[0] == "default"
    assert context_namespace({}, home=tmp_path)[0] == "default"


def submitted_namespace(capsys) -> str:
    assert foxhunt(*CI_RUN, "--dry-run", "-o", "json") == 0
    return json.loads(capsys.readouterr().out)["metadata"]["namespace"]


def test_submit_without_argo_namespace_goes_to_the_kube_contexts_namespace(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", "lab", {"lab": "ml-lab"})))

    assert submitted_namespace(capsys) == "ml-lab"


def test_argo_namespace_wins_over_the_kube_context(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARGO_NAMESPACE", "ci")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", "lab", {"lab": "ml-lab"})))

    assert submitted_namespace(capsys) == "ci"


def test_submit_without_any_namespace_setting_goes_to_default(monkeypatch, capsys):
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)

    assert submitted_namespace(capsys) == "default"


def test_the_kube_contexts_namespace_reaches_the_argo_server(argo, tmp_path, monkeypatch):
    monkeypatch.delenv("ARGO_NAMESPACE")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", "lab", {"lab": "ci"})))

    assert foxhunt(*CI_RUN) == 0
    assert argo.requests[0]["body"]["namespace"] == "ci"


def test_a_kubeconfig_that_is_not_yaml_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    broken = tmp_path / "config"
    broken.write_text("contexts: [unclosed\n")
    monkeypatch.setenv("KUBECONFIG", str(broken))

    line = refused(capsys, *CI_RUN, "--dry-run")

    assert line == (
        f"foxhunt submit: error: kubeconfig {broken}: cannot be read (ParserError); set ARGO_NAMESPACE or pass -n"
    )


def test_a_kube_context_namespace_that_is_no_namespace_name_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ARGO_NAMESPACE", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "config", "lab", {"lab": "Team A"})))

    assert refused(capsys, *CI_RUN, "--dry-run").startswith(
        "foxhunt submit: error: kube context 'lab' namespace 'Team A': a namespace is at most 63"
    )
