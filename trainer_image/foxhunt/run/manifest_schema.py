"""The manifest read as untrusted input: every field's type checked, every output name confined.

A manifest in `--out` decides which files a resumed run reads and which `--overwrite` removes, and
anyone who can write `--out` can write it. So before a field is used: the top level and each record
have the fields and types a run writes, every checksum is 64 hex digits, and every output name is a
relative name of a file a run writes (foxhunt.run.out_folder.run_file: no absolute path, no `..`, no
name outside the fold and trial folders). A manifest that fails is "not a foxhunt manifest".
"""

from __future__ import annotations

import re

from foxhunt.run.out_folder import SEED_FOLDER, run_file

SHA256 = re.compile(r"[0-9a-f]{64}")
FOLD_KEY = re.compile(r"\d{1,6}")


class ManifestInvalid(ValueError):
    """What makes a manifest unusable, one line naming the field."""


def _require(ok: bool, where: str, problem: str) -> None:
    if not ok:
        raise ManifestInvalid(f"{where} {problem}")


def _typed(data: dict, key: str, kind, where: str, optional: bool = False):
    _require(key in data, where, f"has no {key!r}")
    value = data[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
    _require(ok or (optional and value is None), f"{where}.{key}", f"is {type(value).__name__}, not {kind}")
    return value


def _output_name(name: object, where: str) -> None:
    if not isinstance(name, str):
        raise ManifestInvalid(f"{where} names an output that is no string: {name!r}")
    _require(
        "\\" not in name and "\x00" not in name and not name.startswith("/") and run_file(name),
        where,
        f"names {name[:80]!r}, which is no file a run writes inside --out",
    )


def _work(data: object, where: str, prefix: str) -> None:
    if not isinstance(data, dict):
        raise ManifestInvalid(f"{where} is not an object")
    folds = _typed(data, "folds", dict, where)
    for key, record in folds.items():
        at = f"{where}.folds.{key}"
        _require(bool(FOLD_KEY.fullmatch(key)), at, "is no fold number")
        _require(isinstance(record, dict), at, "is not an object")
        _typed(record, "finished_at", str, at)
        outputs = _typed(record, "outputs", dict, at)
        _require(bool(outputs), at, "lists no outputs")
        for name, digest in outputs.items():
            _output_name(name, f"{at}.outputs")
            # The run's folds list every seed's files (--seeds K): fold_N/ and seed_S/fold_N/.
            top, _, rest = name.partition("/")
            own = rest if not prefix and SEED_FOLDER.fullmatch(top) else name
            _require(
                own.startswith(f"{prefix}fold_{int(key)}/"),
                f"{at}.outputs",
                f"names {name!r}, not its fold's",
            )
            _require(
                isinstance(digest, str) and bool(SHA256.fullmatch(digest)),
                f"{at}.outputs",
                "has a bad sha256",
            )


def validate(data: object) -> None:
    """ManifestInvalid (a ValueError) naming the first field that a run would not have written."""
    if not isinstance(data, dict):
        raise ManifestInvalid("manifest is not a JSON object")
    _typed(data, "format", int, "manifest")
    for key in ("fxcache", "code_version", "device"):
        _typed(data, key, str, "manifest")
    _typed(data, "fxcache_checksum", str, "manifest", optional=True)
    _typed(data, "config", dict, "manifest")
    _work(data.get("run"), "manifest.run", "")
    trials = data.get("trials", {})
    _require(isinstance(trials, dict), "manifest.trials", "is not an object")
    for number, work in trials.items():
        _require(bool(FOLD_KEY.fullmatch(number)), f"manifest.trials.{number}", "is no trial number")
        _work(work, f"manifest.trials.{number}", f"trials/{int(number):04d}/")
    search = data.get("search", {})
    _require(isinstance(search, dict) or search is None, "manifest.search", "is not an object")
