"""What a run may touch in its `--out`: the files it writes, by name, and nothing else.

`--overwrite` removes the run's own files one by one: the top-level run files, and inside the run's
folders (`fold_N/`, `seed_S/fold_N/`, `holdout/fold_N/`, `trials/NNNN/`, `trials/NNNN/fold_N/`) the files a fold or a trial writes, with
the temp files of an interrupted atomic write. A file of any other name inside those folders, or a
symbolic link anywhere among them, means the folder holds something no run wrote: `--overwrite` then
refuses, naming it, before anything is removed. Other names at the top of `--out` (notes, the trial
workers' `trials/worker-N` of an Argo study) are left alone. No input of a run may live inside its
`--out`, where a later `--overwrite` or a resumed fold would remove or replace it.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

from foxhunt import out_names, storage
from foxhunt.errors import UsageError
from foxhunt.storage.locations import locate

# What a run writes at the top of --out; the pipeline's fxcache and the lock are the run's too, but
# `--overwrite` keeps them (the pipeline has just written the fxcache).
TOP_FILES = frozenset({*out_names.RUN_FILES, out_names.TIMINGS_PICTURE, out_names.EVALUATION})
KEPT_FILES = frozenset({out_names.LOCK, out_names.PIPELINE_FXCACHE})
FOLD_FOLDER = out_names.FOLD_FOLDER
SEED_FOLDER = out_names.SEED_FOLDER
HOLDOUT_FOLDER = out_names.HOLDOUT_DIR
TRIALS_FOLDER = out_names.TRIALS_DIR
TRIAL_FOLDER = out_names.TRIAL_FOLDER
FOLD_FILE = re.compile(
    "|".join(re.escape(n) for n in (out_names.WEIGHTS, out_names.FOLD_REPORT, out_names.POSITIONS))
    + r"|norm_stats_fold\d+\.json"
)
TRIAL_FILE = out_names.TRIAL_REPORT
TEMP_FILE = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{12}\.tmp")  # foxhunt.storage.local's atomic writes


def _plain(name: str) -> str:
    """A temp file's final name; any other name as it is."""
    match = TEMP_FILE.fullmatch(name)
    return match.group("name") if match else name


def folds_folder(top: str) -> bool:
    """True for a top-level folder that holds only `fold_N/` folders: an extra seed's, the holdout's."""
    return top == HOLDOUT_FOLDER or bool(SEED_FOLDER.fullmatch(top))


def in_run_folder(name: str) -> bool:
    """True when `name` (relative to --out, with "/") lies in a folder only a run writes."""
    parts = name.split("/")
    if len(parts) < 2:
        return False
    if FOLD_FOLDER.fullmatch(parts[0]) or folds_folder(parts[0]):
        return True
    return parts[0] == TRIALS_FOLDER and len(parts) >= 3 and bool(TRIAL_FOLDER.fullmatch(parts[1]))


def run_file(name: str) -> bool:
    """True when `name` (relative to --out) is a file a run writes: at the top, in a fold, in a trial."""
    parts = name.split("/")
    last = _plain(parts[-1])
    if len(parts) == 1:
        return last in TOP_FILES or last in KEPT_FILES
    if FOLD_FOLDER.fullmatch(parts[0]):
        return len(parts) == 2 and bool(FOLD_FILE.fullmatch(last))
    if folds_folder(parts[0]):
        return len(parts) == 3 and bool(FOLD_FOLDER.fullmatch(parts[1])) and bool(FOLD_FILE.fullmatch(last))
    if parts[0] != TRIALS_FOLDER or len(parts) < 3 or not TRIAL_FOLDER.fullmatch(parts[1]):
        return False
    rest = parts[2:]
    if len(rest) == 1:
        return last == TRIAL_FILE
    return len(rest) == 2 and bool(FOLD_FOLDER.fullmatch(rest[0])) and bool(FOLD_FILE.fullmatch(last))


def _local_entries(root: Path) -> tuple[list[str], list[str]]:
    """Files and symbolic links under `root`, relative, without following any link."""
    files, links = [], []
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel = Path(folder).relative_to(root)
        for name in dirs + names:
            path = Path(folder) / name
            relative = (rel / name).as_posix()
            if path.is_symlink():
                links.append(relative)
            elif name in names:
                files.append(relative)
    return sorted(files), sorted(links)


def _entries(out_uri: str) -> tuple[list[str], list[str]]:
    loc = locate(out_uri)
    if loc.is_s3:
        return storage.list_prefix(out_uri), []
    return _local_entries(loc.path) if loc.path.is_dir() else ([], [])


def overwrite_plan(out_uri: str) -> list[str]:
    """The files `--overwrite` removes from `out_uri` (relative names); UsageError (exit 2) naming the
    first file no run wrote, or the first symbolic link, inside the run's folders or among its files."""
    files, links = _entries(out_uri)
    for link in links:
        top = link.split("/")[0]
        run_top = FOLD_FOLDER.fullmatch(top) or folds_folder(top) or top == TRIALS_FOLDER
        if in_run_folder(link) or run_top or run_file(link):
            raise UsageError(
                f"{out_uri}: --overwrite refused: {link} is a symbolic link, which a run never writes; "
                "remove it yourself or use another --out"
            )
    for name in files:
        if in_run_folder(name) and not run_file(name):
            raise UsageError(
                f"{out_uri}: --overwrite refused: {name} was not written by a foxhunt run; "
                "move it away or use another --out"
            )
    return [
        n for n in files if run_file(n) and (n not in KEPT_FILES or TEMP_FILE.fullmatch(n.split("/")[-1]))
    ]


def remove_planned(out_uri: str, names: Iterable[str]) -> list[str]:
    """Delete each planned file (never a folder tree), then the run folders left empty; the names."""
    removed = []
    for name in names:
        storage.delete(storage.join(out_uri, name))
        removed.append(name)
    loc = locate(out_uri)
    if not loc.is_s3:
        folders = {posixpath.dirname(n) for n in removed if "/" in n}
        parents = {posixpath.dirname(f) for f in folders if "/" in f}
        for folder in sorted(folders | parents, reverse=True):
            path = loc.path / folder
            if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
                path.rmdir()
        trials = loc.path / TRIALS_FOLDER
        if trials.is_dir() and not trials.is_symlink() and not any(trials.iterdir()):
            trials.rmdir()
    return removed


def inside(inner, outer) -> bool:
    if inner.is_s3 != outer.is_s3:
        return False
    if inner.is_s3:
        prefix = outer.key.rstrip("/")
        return inner.bucket == outer.bucket and (not prefix or inner.key.startswith(prefix + "/"))
    outer_path = Path(os.path.realpath(outer.path))
    inner_path = Path(os.path.realpath(inner.path))
    return inner_path != outer_path and outer_path in inner_path.parents


def same_or_inside(inner_uri: str, outer_uri: str) -> bool:
    """True when `inner_uri` is `outer_uri` (links resolved) or lies inside it."""
    inner, outer = locate(inner_uri), locate(outer_uri)
    if inner.is_s3 or outer.is_s3:
        same = (
            inner.is_s3
            and outer.is_s3
            and (inner.bucket, inner.key.rstrip("/")) == (outer.bucket, outer.key.rstrip("/"))
        )
    else:
        same = os.path.realpath(inner.path) == os.path.realpath(outer.path)
    return same or inside(inner, outer)


def check_inputs_outside(out_uri: str, inputs: Iterable[str | None], what: str = "--out") -> None:
    """UsageError (exit 2) when an input lives inside `out_uri`, where the run may remove or replace it."""
    out = locate(out_uri)
    for given in inputs:
        if given and inside(locate(given), out):
            raise UsageError(
                f"{given}: an input inside {what} {out_uri}, where a run removes and replaces files; "
                f"move it out or use another {what}"
            )


def remove_empty_folder(out_uri: str) -> None:
    """Remove the local folder `out_uri` when it holds nothing (a refused run's new --out); S3 has no
    folders to leave behind."""
    loc = locate(out_uri)
    if not loc.is_s3 and loc.path.is_dir() and not loc.path.is_symlink() and not any(loc.path.iterdir()):
        loc.path.rmdir()


def local_folder_exists(out_uri: str) -> bool:
    """True when `out_uri` is a local path that exists, or an S3 prefix (which has no folder to leave)."""
    loc = locate(out_uri)
    return loc.is_s3 or loc.path.exists()


def remove_stale_temp_files(out_uri: str) -> list[str]:
    """Delete the temp files of atomic writes that a killed run left in `out_uri` (its own names only,
    no link followed); the caller holds the --out lock, so no live write owns one. Returns them."""
    loc = locate(out_uri)
    if loc.is_s3 or not loc.path.is_dir():
        return []  # an S3 write is one PUT: nothing half-written stays behind
    files, _links = _local_entries(loc.path)
    stale = [n for n in files if TEMP_FILE.fullmatch(n.split("/")[-1]) and run_file(n)]
    for name in stale:
        (loc.path / name).unlink(missing_ok=True)
    return stale
