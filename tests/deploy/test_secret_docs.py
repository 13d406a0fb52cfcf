"""The Secrets the READMEs (and the install notes) tell a user to create are the ones the pods read.

The chart is rendered by Helm's own code; every Secret reference of its pods (secretKeyRef, envFrom,
secret volumes) is compared with the `kubectl create secret generic NAME --from-literal=KEY=...`
commands in the documents.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.chart_render import CHART, of_kind, render, render_manifests
from support.secret_docs import creation_problems, secrets_created, secrets_read

REPO = Path(__file__).resolve().parents[2]
READMES = {"README.md": REPO / "README.md", "helm/foxhunt/README.md": CHART / "README.md"}


@pytest.fixture(scope="module")
def reads():
    return secrets_read(of_kind(render(), "WorkflowTemplate").values())


@pytest.mark.parametrize("readme", sorted(READMES))
def test_each_readme_creates_every_secret_the_pods_read_with_the_keys_they_read(readme, reads):
    assert creation_problems(READMES[readme].read_text(), reads, every_secret=True) == []


def test_the_install_notes_create_secrets_with_the_keys_the_pods_read(reads):
    notes = render_manifests()["foxhunt/templates/NOTES.txt"]

    assert secrets_created(notes)  # the notes do tell the user to create a Secret
    assert creation_problems(notes, reads, every_secret=False) == []


def test_the_pods_read_the_s3_the_study_and_the_compile_cache_secrets(reads):
    assert set(reads) == {"foxhunt-s3", "foxhunt-compile-cache", "{{inputs.parameters.study-storage-secret}}"}
    assert reads["foxhunt-compile-cache"].optional == {"key"}
    assert reads["{{inputs.parameters.study-storage-secret}}"].required == {"url"}


def test_a_readme_naming_another_key_of_the_compile_cache_secret_is_caught(reads):
    readme = READMES["README.md"].read_text()
    wrong = readme.replace(
        "foxhunt-compile-cache\n  --from-literal=key=",
        "foxhunt-compile-cache\n  --from-literal=FOXHUNT_COMPILE_CACHE_KEY=",
    )

    assert wrong != readme
    assert creation_problems(wrong, reads, every_secret=True) == [
        "Secret foxhunt-compile-cache: keys ['FOXHUNT_COMPILE_CACHE_KEY'] are read by no pod (read: ['key'])"
    ]


def test_a_readme_that_forgets_a_required_key_or_a_secret_is_caught(reads):
    text = "kubectl -n ml create secret generic foxhunt-s3 --from-literal=AWS_ACCESS_KEY_ID=...\n"

    assert creation_problems(text, reads, every_secret=True) == [
        "the pods read Secret foxhunt-compile-cache (keys ['key']); nothing creates it",
        "the pods read Secret {{inputs.parameters.study-storage-secret}} (keys ['url']); nothing creates it",
        "Secret foxhunt-s3: the pods need keys ['AWS_SECRET_ACCESS_KEY'], not created",
    ]


def test_a_study_secret_is_matched_through_the_name_its_parameter_is_given(reads):
    text = (
        "kubectl create secret generic optuna-db --from-literal=url='postgresql://u:p@h:5432/d'\n"
        "foxhunt submit -p study-storage-secret=optuna-db\n"
        "kubectl create secret generic foxhunt-study --from-literal=url=postgresql://...\n"
    )

    assert creation_problems(text, reads, every_secret=False) == [
        "creates Secret foxhunt-study, which no pod reads"
    ]


def test_secret_commands_are_read_across_line_continuations_and_quoted_values():
    text = (
        "    kubectl -n ml create secret generic a \\\n      --from-literal=K1=... --from-literal=K2='x y' \\\n"
        '      --from-literal=K3="$(openssl rand -hex 32)"\n    helm install --from-literal=NOT=this\n'
        'and in running text `kubectl create secret generic b\n  --from-literal=key="$(cmd)"`; then prose.\n'
    )

    assert secrets_created(text) == {"a": {"K1", "K2", "K3"}, "b": {"key"}}
