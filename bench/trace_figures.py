"""Figures that trace to code: every results file the docs cite exists and names a commit of HEAD's history.

    python bench/trace_figures.py [--repo DIR]      (lists each problem; exit 1 if there is any)

A figure in README.md or bench/README.md is only as good as the file behind it, and that file only as
good as the commit it names: a commit outside the history cannot be checked out, so nobody can say what
code was measured. Checked here:
- each `bench/results/…` file the documents cite (by path, by bare dated name, with `*` or `{a,b}`)
  exists;
- every .json and .log in bench/results names a commit (the JSON's `commit` field, else its file name;
  where both give one they agree), and that commit is in this clone and an ancestor of HEAD;
- every commit hash the documents write out is an ancestor of HEAD.
Nothing is fetched: a shallow clone is reported as one, with what to run.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path

DOCUMENTS = ("README.md", "bench/README.md", "CHANGELOG.md", "CONTRIBUTING.md", "helm/foxhunt/README.md")
RESULTS = Path("bench") / "results"
RECORDS = (".json", ".log")  # what a benchmark writes; other files there (a report in prose) name no run
# A file reference: path characters, `*` and `{a,b}` groups, ending in .json or .log
REFERENCE = re.compile(r"(?:[\w*/.\-…<>]|\{[^{}\s`]*\})+\.(?:json|log)\b")
DATED = re.compile(r"\d{4}-\d{2}-\d{2}")
HASH = re.compile(r"^[0-9a-f]{7,40}")
# A hash written out in prose: 7-40 hex digits with a letter and a digit (no English word or plain number)
MENTION = re.compile(r"(?<![\w/.\-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w\-])")


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git -C repo args…`, its output captured; never raises on a non-zero exit."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def history_problem(repo: Path) -> str | None:
    """Why this checkout cannot answer "is commit C in HEAD's history" (no git, no history, shallow)."""
    try:
        top = git(repo, "rev-parse", "--is-shallow-repository")
    except FileNotFoundError:
        return "git is not installed: the provenance check reads the repository's history with git"
    if top.returncode != 0:
        return (
            f"{repo} is not a git checkout ({top.stderr.strip()}): the provenance check needs main's history"
        )
    if top.stdout.strip() == "true":
        return (
            f"{repo} is a shallow clone: the commits that bench/results names are not all here, so none is "
            "checked; this check fetches nothing: run `git fetch --unshallow` (or clone without --depth)"
        )
    return None


def expand_braces(pattern: str) -> list[str]:
    """`a-{x,y}-b` → [`a-x-b`, `a-y-b`], every group expanded."""
    group = re.search(r"\{([^{}]*)\}", pattern)
    if not group:
        return [pattern]
    head, tail = pattern[: group.start()], pattern[group.end() :]
    return [name for choice in group.group(1).split(",") for name in expand_braces(head + choice + tail)]


def cited_patterns(text: str) -> list[tuple[int, str]]:
    """(line, name pattern inside bench/results) for each results file the text cites.

    A results file is one written under `results/` or a bare name with a date in it (`x-2026-12-03-….json`);
    `summary.json` or `fold_N/report.json` are a run's outputs, and a name with `…` or `<…>` is a template."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in REFERENCE.finditer(line):
            token = match.group(0)
            if "…" in token or "<" in token or ">" in token:
                continue
            name = re.sub(r"^(?:.*/)?results/", "", token)
            under_results = name != token
            if "/" in name or not (under_results or DATED.search(name)):
                continue
            found.append((number, name))
    return found


def _hash_in(value: object) -> str | None:
    found = HASH.match(value.strip()) if isinstance(value, str) else None
    return found.group(0) if found else None


def named_commit(path: Path) -> tuple[str | None, str | None]:
    """(the commit a results file names, a problem): its JSON `commit` field, else a hash in its name."""
    in_name = next((part for part in path.stem.split("-") if HASH.fullmatch(part)), None)
    in_field = None
    if path.suffix == ".json":
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            return None, f"{path.name} cannot be read as JSON ({error})"
        in_field = _hash_in(record.get("commit")) if isinstance(record, dict) else None
    if in_name and in_field and not (in_name.startswith(in_field) or in_field.startswith(in_name)):
        return None, f"{path.name}: its name says commit {in_name}, its `commit` field {in_field}"
    commit = in_field or in_name
    if commit is None:
        return None, f"{path.name} names no commit (no `commit` field, no hash in its name)"
    return commit, None


def commit_problem(repo: Path, commit: str) -> str | None:
    """Why `commit` is not a commit of HEAD's history, or None when it is."""
    if git(repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return f"commit {commit} is not in this repository (lost from history, or never committed)"
    if git(repo, "merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        return f"commit {commit} is not an ancestor of HEAD (it is on another branch)"
    return None


def _citation_problems(repo: Path, documents: tuple[str, ...], traced: dict[str, str | None]) -> list[str]:
    """A cited results file that does not exist (a citation with `*` that matches none), or does not trace."""
    out = []
    for document in documents:
        path = repo / document
        if not path.exists():
            continue
        for line, pattern in cited_patterns(path.read_text()):
            for name in expand_braces(pattern):
                matched = fnmatch.filter(traced, name)
                if not matched:
                    out.append(f"{document}:{line} cites {RESULTS / name}, which does not exist")
                out += [f"{document}:{line} cites {m}: {traced[m]}" for m in matched if traced[m]]
    return out


def _mention_problems(repo: Path, documents: tuple[str, ...]) -> list[str]:
    """A commit hash the documents write out that is not a commit of HEAD's history."""
    out = []
    for document in documents:
        path = repo / document
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for commit in MENTION.findall(REFERENCE.sub(" ", line)):
                problem = commit_problem(repo, commit)
                if problem:
                    out.append(f"{document}:{number} names {commit}: {problem}")
    return out


def record_problem(repo: Path, path: Path) -> str | None:
    """Why the results file at `path` does not trace to a commit of HEAD's history, or None."""
    commit, problem = named_commit(path)
    return problem or commit_problem(repo, commit or "")


def problems(repo: Path, documents: tuple[str, ...] = DOCUMENTS) -> list[str]:
    """Every reason a figure in `documents` does not trace to a commit of HEAD's history (none: all do)."""
    unanswerable = history_problem(repo)
    if unanswerable:
        return [unanswerable]
    folder = repo / RESULTS
    records = sorted(p for p in folder.iterdir() if p.suffix in RECORDS) if folder.is_dir() else []
    traced = {path.name: record_problem(repo, path) for path in records}
    out = [f"{RESULTS / name}: {problem}" for name, problem in traced.items() if problem]
    return out + _citation_problems(repo, documents, traced) + _mention_problems(repo, documents)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    found = problems(Path(p.parse_args(argv).repo))
    print("\n".join(found) if found else "every cited results file traces to a commit of HEAD's history")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
