"""Resuming a universe run: the same command again takes over the universe folds an earlier attempt
completed and trains the rest, to the same outputs as a run never interrupted.

As each universe fold ends, ``manifest.json`` in `--out` records it (`UniverseLedger.record`): per member
(seed) the instruments it validated, its pooled choice (`FoldSelection`, whose out-of-sample window later
folds' pooled decisions weigh) and the sha256 of every file the fold wrote under ``instruments/``. The
manifest is written atomically after the fold's files, so a kill at any point leaves a fold recorded
whole or not at all. It also holds what identifies the run (`universe_identity`): the instruments' names
in order and their fxcaches' checksums, the settings that shape the results (`config.RESULT_SETTINGS`),
the code version and the device kind.

The same command on an `--out` holding such a manifest and no finished summary (none, or a failed or
interrupted attempt's: `universe_failure`) (`open_ledger`): an
identity that differs is refused in one line naming what differs (UsageError, exit 2, nothing written);
every recorded file is checked against its sha256 (a missing or changed one is refused, naming it); the
recorded folds are taken over (`UniverseLedger.taken_over`, the walk's `taken_over` hook): each member's
per-instrument reports and positions are read back (`fold.load_fold`) and its choice from the record, so
the later folds weigh the same evidence and decide as the first attempt did. `--overwrite` starts over.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from foxhunt import __version__, out_names, storage, strict_json
from foxhunt.config import RESULT_SETTINGS, RunConfig
from foxhunt.data.fxcache import FxCache
from foxhunt.data.universe import UniverseFold
from foxhunt.errors import UsageError
from foxhunt.run.fold import FoldOutcome, Progress, load_fold
from foxhunt.run.lifecycle import now_iso
from foxhunt.run.manifest import sha256
from foxhunt.run.sinks.telemetry import RunMetrics
from foxhunt.run.sinks.telemetry_reads import fold_figures
from foxhunt.run.universe_walk import (
    INSTRUMENTS_FOLDER,
    InstrumentView,
    UniverseOutcome,
    member_folder,
    raise_first_divergence,
)
from foxhunt.run.walk import FoldDone, WalkHooks
from foxhunt.train import TrainingDiverged
from foxhunt.train.fold_selection import FoldSelection

MANIFEST = out_names.MANIFEST
KIND = "universe"  # what tells a universe run's manifest from one instrument's


def universe_identity(
    caches: Sequence[FxCache], names: Sequence[str], device: str, settings: RunConfig
) -> dict:
    """What must be equal for a universe run to continue the outputs of an earlier attempt: its
    instruments (names in order, fxcache checksums), the result settings, the code version, the device."""
    config = asdict(settings)
    identity = {
        "instruments": [
            {"name": name, "fxcache": cache.uri, "checksum": cache.metadata.get("checksum")}
            for name, cache in zip(names, caches, strict=True)
        ],
        "settings": {name: config[name] for name in RESULT_SETTINGS},
        "code_version": __version__,
        "device": device,
    }
    return json.loads(strict_json.json_bytes(identity))  # as the file holds it: tuples as lists


def identity_differences(recorded: Mapping, current: Mapping) -> list[str]:
    """What differs between two identities, each as "what: recorded → current" (the fxcaches' places
    aside: the same content moved elsewhere continues)."""
    old_names = [i["name"] for i in recorded.get("instruments", [])]
    new_names = [i["name"] for i in current["instruments"]]
    if old_names != new_names:
        return [f"instruments: {', '.join(old_names)} → {', '.join(new_names)}"]
    found = [
        f"fxcache {new['fxcache']} of {new['name']}: checksum {old.get('checksum')} → {new['checksum']}"
        for old, new in zip(recorded["instruments"], current["instruments"], strict=True)
        if old.get("checksum") != new["checksum"]
    ]
    old_flat, new_flat = _flatten(recorded.get("settings"), ""), _flatten(current["settings"], "")
    found += [
        f"{key}: {old_flat.get(key)!r} → {new_flat.get(key)!r}"
        for key in sorted(set(old_flat) | set(new_flat))
        if old_flat.get(key) != new_flat.get(key)
    ]
    found += [
        f"{key}: {recorded.get(key)!r} → {current[key]!r}"
        for key in ("code_version", "device")
        if recorded.get(key) != current[key]
    ]
    return found


def _flatten(value: object, prefix: str) -> dict[str, object]:
    if isinstance(value, dict):
        flat: dict[str, object] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


@dataclass
class UniverseLedger:
    """The universe run's manifest as the walk goes: its identity and the folds completed so far."""

    out_uri: str
    identity: dict
    settings: RunConfig
    names: list[str]
    folds: dict[int, dict] = field(default_factory=dict)  # fold → its record (`record`)
    current_fold: int | None = None  # the fold under way (the walk's `at_fold`), which a failure names
    holdout_fold: int | None = None  # the held-out fold's number, once it trains

    def at_fold(self, fold: int | None) -> None:
        """The walk's `at_fold` hook (the folds' and the held-out fold's): the fold begun, None at the end."""
        self.current_fold = fold

    def fold_name(self) -> str:
        """The fold under way as a failure names it (as `lifecycle.Run` does); "the run" when none."""
        if self.current_fold is None:
            return "the run"
        return "the held-out fold" if self.current_fold == self.holdout_fold else f"fold {self.current_fold}"

    def write(self) -> None:
        """The manifest, written atomically (a reader sees the old one or the new one, never half)."""
        data = {"kind": KIND, **self.identity, "folds": {str(k): v for k, v in sorted(self.folds.items())}}
        storage.write_bytes(storage.join(self.out_uri, MANIFEST), strict_json.json_bytes(data))

    def start(self) -> None:
        """Before the walk: an earlier attempt's summary removed (a finished run's, under `--overwrite`: an
        interrupted start-over then resumes, not refused as finished; a failed or interrupted one's, which
        this attempt replaces); the manifest written with the folds taken over."""
        storage.delete(storage.join(self.out_uri, out_names.SUMMARY))
        self.write()

    def record(self, done: FoldDone) -> None:
        """A fold trained here: each member's instruments, choice and files into the manifest, written."""
        members: dict[str, dict] = {}
        outputs: dict[str, str] = {}
        for m, result in sorted(done.results.items()):
            if not isinstance(result, UniverseOutcome):
                continue  # it diverged: the walk drops it, and a resume leaves it out the same way
            choice = None if result.choice is None else result.choice.to_dict()
            members[str(m)] = {"instruments": sorted(result.instruments), "choice": choice}
            for i, outcome in result.instruments.items():
                prefix = _member_prefix(self.names[i], self.settings, m)
                outputs.update(
                    {f"{prefix}/{name}": digest for name, digest in (outcome.outputs or {}).items()}
                )
        self.folds[done.fold.fold] = {"members": members, "outputs": outputs, "finished_at": now_iso()}
        self.write()

    def taken_over(self, fold: UniverseFold) -> dict[int, UniverseOutcome] | None:
        """A fold the earlier attempt completed: each recorded member's outcome read back from its files
        (verified by `open_ledger`); None for a fold to train."""
        record = self.folds.get(fold.fold)
        if record is None:
            return None
        taken = {}
        for key, member in record["members"].items():
            m = int(key)
            outcomes: dict[int, FoldOutcome] = {
                i: load_fold(member_folder(self.out_uri, self.names[i], self.settings, m), fold.fold)
                for i in member["instruments"]
            }
            choice = None if member["choice"] is None else FoldSelection.from_dict(member["choice"])
            taken[m] = UniverseOutcome(outcomes, choice)
        return taken


def _member_prefix(name: str, settings: RunConfig, member: int) -> str:
    """Where member `member` writes instrument `name`'s folds, relative to --out (`member_folder`)."""
    prefix = f"{INSTRUMENTS_FOLDER}/{name}"
    return prefix if member == 0 else f"{prefix}/{out_names.seed_folder(settings.seed + member)}"


def open_ledger(
    out_uri: str, identity: dict, settings: RunConfig, names: Sequence[str], progress: Progress
) -> UniverseLedger:
    """The ledger of a universe run in `out_uri`: the earlier attempt's completed folds when its manifest
    is there (same identity, every file intact: else UsageError naming what differs or the file), none
    with `--overwrite` or no manifest. Reads only; the walk writes (`UniverseLedger.write`)."""
    ledger = UniverseLedger(out_uri, identity, settings, list(names))
    uri = storage.join(out_uri, MANIFEST)
    if settings.overwrite or not storage.exists(uri):
        return ledger
    try:
        recorded = json.loads(storage.read_bytes(uri))
        if recorded.get("kind") != KIND:
            raise ValueError("not a universe run's manifest")
        folds = {int(k): v for k, v in recorded["folds"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{uri}: unreadable as a universe run's manifest ({exc}); use --overwrite") from exc
    changed = identity_differences(recorded, identity)
    if changed:
        raise UsageError(
            f"{out_uri} holds an interrupted universe run with other inputs or settings ({'; '.join(changed)}); "
            "give the same ones to resume it, another --out, or --overwrite to start over"
        )
    for fold, record in sorted(folds.items()):
        _verify(out_uri, fold, record["outputs"])
    ledger.folds = folds
    if folds:
        progress(
            f"resuming: {len(folds)} universe fold(s) completed by an earlier attempt taken over, files verified"
        )
    return ledger


def _verify(out_uri: str, fold: int, outputs: Mapping[str, str]) -> None:
    """Every file of a recorded fold present and equal to its sha256, else UsageError naming it."""
    for name, digest in sorted(outputs.items()):
        uri = storage.join(out_uri, name)
        try:
            data = storage.read_bytes(uri)
        except FileNotFoundError:
            data = None
        if data is None or sha256(data) != digest:
            what = "is missing" if data is None else "does not match its sha256 in manifest.json"
            raise UsageError(
                f"{uri}: fold {fold}'s file {what}; the interrupted run cannot resume: --overwrite starts over"
            )


def universe_hooks(
    ledger: UniverseLedger,
    views: Sequence[InstrumentView],
    metrics: RunMetrics,
    progress: Progress,
    check: Callable[[], None] = lambda: None,
) -> WalkHooks:
    """The universe walk's hooks: completed folds taken over from `ledger`, each trained fold recorded in
    it, each instrument's fold figures told to `metrics` under its name, `check` at each fold's start (a
    stop signal raises there). As in a run's walk (`walk_forward`): a seed that diverged is named with why,
    member 0's divergence ends the run (raised, its fold not recorded: the same command trains it again),
    another's leaves the seeds' spreads."""

    def on_fold(done: FoldDone) -> tuple[int, ...]:
        for m, result in sorted(done.results.items()):
            if isinstance(result, TrainingDiverged):
                progress(f"seed {ledger.settings.seed + m}: {result}")
        raise_first_divergence(done)
        if done.taken:
            progress(f"fold {done.fold.fold} taken over: completed by an earlier attempt, files verified")
        else:
            ledger.record(done)
        # The fold is complete: a stop from here is after it (as `lifecycle.Run.fold_finished` has it).
        ledger.at_fold(None)
        if isinstance(first := done.results.get(0), UniverseOutcome):
            for i, outcome in first.instruments.items():
                metrics.fold_finished(fold_figures(outcome.report), views[i].name)
        return ()

    return WalkHooks(
        progress=progress,
        check=check,
        at_fold=ledger.at_fold,
        on_fold=on_fold,
        taken_over=ledger.taken_over,  # type: ignore[arg-type]
    )
