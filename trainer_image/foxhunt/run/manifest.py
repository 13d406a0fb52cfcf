"""The run manifest in `--out`: what the outputs there were made from, and which work they complete.

`manifest.json` holds the fxcache checksum, the full resolved config, the code version, the device
kind, and for every completed fold the sha256 of each of its output files. It is written atomically
at the start of a run and after each fold, so a run started again with the same command (a
retried pod) can tell which folds are done and intact, skip them, and train only the rest.

The work is kept per scope: `run` is the walk-forward of the run itself; `trials` holds one record
per hyperparameter-search trial (its number → its completed folds, under `trials/NNNN/`), and
`search` what a search must keep to be continued (objective, study name and storage, search space).
The study itself (Optuna's storage) says which trials finished; a resumed search continues it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from foxhunt import out_names, storage
from foxhunt.config import RESULT_SETTINGS
from foxhunt.errors import UsageError
from foxhunt.redaction import scrub_record
from foxhunt.run.manifest_schema import validate
from foxhunt.run.out_folder import folds_folder, overwrite_plan, remove_planned

MANIFEST_NAME = out_names.MANIFEST
MANIFEST_FORMAT = 1
RUN_FILES = out_names.RUN_FILES
OUTPUT_FOLDER = out_names.FOLD_FOLDER  # the run's folds
# A search's per-trial folders are `trials/NNNN`; other folders under `trials/` (the trial workers'
# `--out` of an Argo study, `trials/worker-N`) belong to other runs.
TRIALS_FOLDER = out_names.TRIALS_DIR
TRIAL_FOLDER = out_names.TRIAL_FOLDER


def sha256(data: bytes) -> str:
    """Hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class FoldRecord:
    """A completed fold: each output file (relative to --out) and its sha256."""

    outputs: dict[str, str]
    finished_at: str


@dataclass
class WorkRecord:
    """The completed folds of one walk-forward: the run itself, or one trial."""

    folds: dict[int, FoldRecord] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> WorkRecord:
        return cls({int(k): FoldRecord(**v) for k, v in data.get("folds", {}).items()})


@dataclass
class Manifest:
    """What a run's outputs were made from, and the work they complete."""

    fxcache: str
    fxcache_checksum: str | None
    code_version: str
    device: str  # "cpu" or "cuda": folds trained on one are not continued on the other
    config: dict  # the full resolved RunConfig
    run: WorkRecord = field(default_factory=WorkRecord)
    trials: dict[int, WorkRecord] = field(default_factory=dict)
    format: int = MANIFEST_FORMAT
    search: dict = field(default_factory=dict)  # a search's identity (foxhunt.search.driver.SearchPlan)

    def identity(self) -> dict[str, object]:
        """What must be equal for a run to continue these outputs, by dotted key."""
        flat: dict[str, object] = {
            "format": self.format,
            "fxcache_checksum": self.fxcache_checksum,
            "code_version": self.code_version,
            "device": self.device,
        }
        for name in RESULT_SETTINGS:
            # As written (URLs redacted): a setting redacted in the file compares equal to the live one.
            flat.update(_flatten(scrub_record(self.config.get(name), registered=False), name))
        flat.update(_flatten(self.search, "search") if self.search else {})
        return flat

    def to_bytes(self) -> bytes:
        # No password in a setting: URLs (with or without a scheme) are redacted by their structure.
        # Registered secrets are not looked for: a setting that spells one (`fill: close`) stays as it
        # is, so the file reads the same whatever secrets the next attempt has, and it resumes.
        # The work records are left out of the walk: their file names (relative to --out), sha256s and
        # times hold no URL. A search's trials make them most of the file, which is written after every
        # round: one line per fold of the run and per trial, written by json's C encoder (an indented dump
        # is Python's, 4× slower at 64 trials), the rest indented.
        members = []
        for f in fields(self):  # in the fields' order, as the file has always listed them
            value = getattr(self, f.name)
            text: str
            if f.name == "run":
                folds = {k: json.dumps(v) for k, v in _work_dict(value)["folds"].items()}
                text = _lines({"folds": _lines(folds, "    ")}, "  ")
            elif f.name == "trials":
                text = _lines({str(k): json.dumps(_work_dict(v)) for k, v in value.items()}, "  ")
            else:
                text = json.dumps(scrub_record(value, registered=False), indent=2).replace("\n", "\n  ")
            members.append(f"  {json.dumps(f.name)}: {text}")
        return ("{\n" + ",\n".join(members) + "\n}\n").encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Manifest:
        """Read a manifest; ValueError when it is not one (foxhunt.run.manifest_schema checks it first)."""
        try:
            data = json.loads(raw)
            validate(data)
            return cls(
                fxcache=data["fxcache"],
                fxcache_checksum=data["fxcache_checksum"],
                code_version=data["code_version"],
                device=data["device"],
                config=data["config"],
                run=WorkRecord.from_dict(data["run"]),
                trials={int(k): WorkRecord.from_dict(v) for k, v in data.get("trials", {}).items()},
                format=int(data["format"]),
                search=dict(data.get("search") or {}),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a foxhunt manifest: {exc}") from exc


def _work_dict(work: WorkRecord) -> dict:
    """`work` as the manifest's JSON holds it: folds by their number as text, each its outputs and time."""
    return {
        "folds": {
            str(k): {"outputs": dict(r.outputs), "finished_at": r.finished_at} for k, r in work.folds.items()
        }
    }


def _lines(entries: dict[str, str], indent: str) -> str:
    """An object of JSON texts, one entry a line at `indent` + 2 spaces."""
    if not entries:
        return "{}"
    rows = [f"{indent}  {json.dumps(key)}: {text}" for key, text in entries.items()]
    return "{\n" + ",\n".join(rows) + f"\n{indent}}}"


def _flatten(value, prefix: str) -> dict[str, object]:
    if isinstance(value, dict):
        flat: dict[str, object] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}"))
        return flat
    return {prefix: value}


def differences(recorded: Manifest, current: Manifest) -> list[str]:
    """The dotted keys whose values differ, each as "key: recorded → current"."""
    old, new = recorded.identity(), current.identity()
    return [
        f"{k}: {old.get(k)!r} → {new.get(k)!r}"
        for k in sorted(set(old) | set(new))
        if old.get(k) != new.get(k)
    ]


def read_manifest(out_uri: str) -> Manifest | None:
    """The manifest in `out_uri`, or None when there is none; ValueError when it is unreadable."""
    try:
        raw = storage.read_bytes(storage.join(out_uri, MANIFEST_NAME))
    except FileNotFoundError:
        return None
    return Manifest.from_bytes(raw)


def write_manifest(out_uri: str, manifest: Manifest) -> None:
    """Write the manifest atomically (a reader sees the old one or the new one, never half)."""
    storage.write_bytes(storage.join(out_uri, MANIFEST_NAME), manifest.to_bytes())


def verify_fold(out_uri: str, record: FoldRecord) -> str | None:
    """None when every output of a completed fold is present and intact, else what is wrong."""
    for name, digest in record.outputs.items():
        try:
            data = storage.read_bytes(storage.join(out_uri, name))
        except FileNotFoundError:
            return f"{name} is missing"
        if sha256(data) != digest:
            return f"{name} does not match its checksum"
    return None


def run_outputs(out_uri: str) -> list[str]:
    """Names in `out_uri` that a run wrote: the run files, fold folders, an extra seed's and the holdout's
    folders (`seed_12`, `holdout`) and trial folders (`trials/0007`)."""
    found = set()
    for name in storage.list_prefix(out_uri):
        top, _, rest = name.partition("/")
        trial = rest.partition("/")[0]
        if top in RUN_FILES or OUTPUT_FOLDER.fullmatch(top) or (rest and folds_folder(top)):
            found.add(top)
        elif top == TRIALS_FOLDER and TRIAL_FOLDER.fullmatch(trial):
            found.add(f"{top}/{trial}")
    return sorted(found)


def checked_overwrite_plan(out_uri: str) -> list[str]:
    """What `--overwrite` would remove (foxhunt.run.out_folder.overwrite_plan); UsageError when that is
    anything but no manifest.json is there: files named like a run's outputs (`daily.csv`, `run.png`)
    without a manifest may be the user's own, and a name alone does not prove a run wrote them."""
    plan = overwrite_plan(out_uri)
    if plan and not storage.exists(storage.join(out_uri, MANIFEST_NAME)):
        shown = ", ".join(plan[:3]) + (f" and {len(plan) - 3} more" if len(plan) > 3 else "")
        raise UsageError(
            f"{out_uri}: --overwrite refused: it holds {shown} but no {MANIFEST_NAME}, so nothing shows "
            "a foxhunt run wrote them; move them away or use another --out"
        )
    return plan


def remove_run_outputs(out_uri: str) -> list[str]:
    """Delete every file an earlier run wrote in `out_uri`, one by one (not the lock, not the pipeline's
    fxcache, not other files); UsageError, with nothing removed, when its folders hold a file no run
    wrote or a symbolic link (foxhunt.run.out_folder), or when there is no manifest to show a run wrote
    them (`checked_overwrite_plan`). Returns the run outputs found, as `run_outputs`."""
    found = run_outputs(out_uri)
    remove_planned(out_uri, checked_overwrite_plan(out_uri))
    return found


def check_out_before_work(out_uri: str, manifest: Manifest, overwrite: bool) -> None:
    """Before any write (the pipeline's fxcache included): what `resume_point` would refuse without the
    fxcache, which is not read yet: foreign files under --overwrite, another run's outputs without a
    manifest, an unreadable manifest, other settings. UsageError (exit 2)."""
    if overwrite:
        checked_overwrite_plan(out_uri)
        return
    recorded = _recorded(out_uri)
    if recorded is None:
        _refuse_outputs_without_manifest(out_uri)
        return
    pending = replace(manifest, fxcache_checksum=recorded.fxcache_checksum)  # compared once it is read
    _refuse_other_settings(out_uri, recorded, pending)


def _recorded(out_uri: str) -> Manifest | None:
    try:
        return read_manifest(out_uri)
    except ValueError as exc:
        raise UsageError(
            f"{out_uri}: manifest.json is unreadable ({exc}); use --overwrite to start over"
        ) from exc


def _refuse_outputs_without_manifest(out_uri: str) -> None:
    found = run_outputs(out_uri)
    if found:
        raise UsageError(
            f"{out_uri} holds outputs of another run ({', '.join(found)}) and no manifest; "
            "use another --out, or --overwrite to remove them"
        )


def _refuse_other_settings(out_uri: str, recorded: Manifest, manifest: Manifest) -> None:
    changed = differences(recorded, manifest)
    if changed:
        raise UsageError(
            f"{out_uri} holds a run with other settings ({'; '.join(changed)}); use the same "
            "settings to resume it, another --out, or --overwrite to remove it"
        )


def resume_point(
    out_uri: str,
    manifest: Manifest,
    overwrite: bool,
    progress: Callable[[str], None],
    check_fold: Callable[[str, FoldRecord], str | None] | None = None,
) -> set[int]:
    """Folds an earlier attempt completed with intact outputs; refuses outputs of another run.
    `check_fold` (foxhunt.run.checkpoint_check) test-loads a fold's checkpoint: a problem means train it again."""
    if overwrite:
        removed = remove_run_outputs(out_uri)
        if removed:
            progress(f"--overwrite: removed {', '.join(removed)} from {out_uri}")
        return set()
    recorded = _recorded(out_uri)
    if recorded is None:
        _refuse_outputs_without_manifest(out_uri)
        return set()
    _refuse_other_settings(out_uri, recorded, manifest)
    done = set()
    for fold, record in sorted(recorded.run.folds.items()):
        problem = verify_fold(out_uri, record)
        if problem is None and check_fold is not None:
            problem = check_fold(out_uri, record)
        if problem is None:
            done.add(fold)
            manifest.run.folds[fold] = record
        else:
            progress(f"fold {fold}: {problem}; training it again")
    _take_over_trials(out_uri, recorded, manifest, progress)
    return done


def _take_over_trials(out_uri: str, recorded: Manifest, manifest: Manifest, progress) -> None:
    # The study holds the trials' results; the records keep their folders' checksums. A damaged
    # folder is reported (its trial is not run again: the study already counted it).
    for number, work in sorted(recorded.trials.items()):
        for fold, record in sorted(work.folds.items()):
            problem = verify_fold(out_uri, record)
            if problem is not None:
                progress(f"trial {number} fold {fold}: {problem}")
        manifest.trials[number] = work
