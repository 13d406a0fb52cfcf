"""Figures that trace to code (bench/trace_figures.py): each cited results file exists and its commit is in
HEAD's history; the checker is run on this repository and on small git repositories made in tmp_path."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import trace_figures  # noqa: E402

# The fixtures' git: no user or system configuration, a fixed author
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_record(repo: Path, name: str, commit: str | None) -> None:
    path = repo / "bench" / "results" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmark": "x", **({"commit": commit} if commit else {})}))


@pytest.fixture
def measured(tmp_path) -> tuple[Path, str]:
    """A repository whose code commit was measured, the results file naming it, a README citing it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    code = commit_all(repo, "code")
    write_record(repo, f"pipeline_cpu-2026-12-03-{code[:7]}.json", code)
    (repo / "README.md").write_text(
        f"The run takes 25 s (`bench/results/pipeline_cpu-2026-12-03-{code[:7]}.json`, at {code[:7]}).\n"
    )
    commit_all(repo, "the figure")
    return repo, code


def test_this_repositorys_cited_results_files_all_trace_to_commits_of_heads_history():
    found = trace_figures.problems(REPO)
    assert not found, "figures that do not trace to code:\n" + "\n".join(found)


def test_a_repository_whose_figures_trace_has_no_problems(measured):
    repo, _ = measured
    assert trace_figures.problems(repo) == []


def test_a_cited_results_file_that_does_not_exist_is_reported(measured):
    repo, code = measured
    (repo / "bench" / "README.md").write_text(
        "P = 8: 1.75× (`results/population_gpu-h200-2026-12-03-abc1234.json`)"
    )

    assert trace_figures.problems(repo) == [
        "bench/README.md:1 cites bench/results/population_gpu-h200-2026-12-03-abc1234.json, which does not exist"
    ]


def test_a_results_file_naming_a_commit_missing_from_the_repository_is_reported_where_it_is_cited(measured):
    repo, _ = measured
    write_record(repo, "perf_targets-h200-2026-12-03-e40b08f.json", "e40b08f")
    (repo / "bench" / "README.md").write_text("34.4 s (`perf_targets-h200-2026-12-03-e40b08f.json`)\n")

    found = trace_figures.problems(repo)

    assert len(found) == 2 and all("commit e40b08f is not in this repository" in p for p in found)
    assert found[1].startswith("bench/README.md:1 cites perf_targets-h200-2026-12-03-e40b08f.json")


def test_an_uncited_results_file_whose_commit_is_on_another_branch_is_reported(measured):
    repo, _ = measured
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "code.py").write_text("x = 2\n")
    elsewhere = commit_all(repo, "other code")
    git(repo, "checkout", "-q", "-")
    write_record(repo, f"real_shape-h200-2026-12-03-{elsewhere[:7]}.json", elsewhere)

    assert trace_figures.problems(repo) == [
        f"bench/results/real_shape-h200-2026-12-03-{elsewhere[:7]}.json: commit {elsewhere} is not an "
        "ancestor of HEAD (it is on another branch)"
    ]


def test_a_file_whose_name_and_commit_field_name_different_commits_is_reported(measured):
    repo, code = measured
    other = git(repo, "rev-parse", "HEAD")  # the commit that added the figure, not the code measured
    write_record(repo, f"pipeline_cpu-2026-12-03-{code[:7]}.json", other)

    found = trace_figures.problems(repo)

    assert f"its name says commit {code[:7]}, its `commit` field {other}" in found[0]
    assert found[1].startswith("README.md:1 cites")


def test_a_results_file_naming_no_commit_is_reported(measured):
    repo, _ = measured
    write_record(repo, "step_profile-h200-2026-12-02.json", None)

    assert trace_figures.problems(repo) == [
        "bench/results/step_profile-h200-2026-12-02.json: step_profile-h200-2026-12-02.json names no commit "
        "(no `commit` field, no hash in its name)"
    ]


def test_a_commit_the_readme_writes_out_must_be_in_heads_history(measured):
    repo, code = measured
    (repo / "README.md").write_text(f"31 s at {code[:7]}; 25 s at `5ec4c20`, on 2026-12-03 at 4000000 bars\n")

    assert trace_figures.problems(repo) == [
        "README.md:1 names 5ec4c20: commit 5ec4c20 is not in this repository (lost from history, or never "
        "committed)"
    ]


def test_each_name_of_a_braced_or_starred_citation_must_exist(measured):
    repo, code = measured
    write_record(repo, f"learner_noharm-eurusd-h200-2026-12-03-{code[:7]}.json", code)
    (repo / "bench" / "README.md").write_text(
        f"`learner_noharm-{{eurusd,yndx}}-h200-2026-12-03-{code[:7]}.json`, `results/install_time-*.json`"
    )

    assert trace_figures.problems(repo) == [
        f"bench/README.md:1 cites bench/results/learner_noharm-yndx-h200-2026-12-03-{code[:7]}.json, which "
        "does not exist",
        "bench/README.md:1 cites bench/results/install_time-*.json, which does not exist",
    ]


def test_run_outputs_and_templates_are_not_read_as_results_files():
    text = (
        "`summary.json`, `fold_N/report.json`, `bench/results/perf_targets-….json`, `results/x-<date>.json`"
    )
    assert trace_figures.cited_patterns(text) == []
    assert trace_figures.cited_patterns("(`results/a.json`, `b-2026-12-03-c.log`)") == [
        (1, "a.json"),
        (1, "b-2026-12-03-c.log"),
    ]


def test_a_shallow_clone_is_reported_and_left_shallow(measured, tmp_path):
    repo, _ = measured
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], env=GIT_ENV, check=True
    )

    found = trace_figures.problems(shallow)

    assert len(found) == 1 and "is a shallow clone" in found[0] and "git fetch --unshallow" in found[0]
    assert git(shallow, "rev-parse", "--is-shallow-repository") == "true"


def test_a_folder_that_is_not_a_git_checkout_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # git must not find a repo above
    found = trace_figures.problems(tmp_path)
    assert len(found) == 1 and "is not a git checkout" in found[0] and "needs main's history" in found[0]
