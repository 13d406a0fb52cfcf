"""The fxcaches of a universe: loaded one by one, then checked together before any work.

Each file is read by `read_fxcache`, whose refusals (missing, truncated, corrupt, a wrong checksum)
already name the file. Together they must be distinct instruments (a name, a content and bars of their
own), built alike (one format, one feature and target list, one foxhunt version: features computed by
two versions need not mean the same), and each must share some time with another. A breach is
BadInput with one line naming the file (`check_universe`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from foxhunt.data.bars import iso_utc
from foxhunt.data.fxcache import FxCache, read_fxcache
from foxhunt.errors import BadInput
from foxhunt.out_names import PIPELINE_FXCACHE

# What must be equal across a universe's fxcaches for their features to mean the same.
BUILD_KEYS = ("format_version", "feature_names", "target_names", "foxhunt_version")


@dataclass(frozen=True)
class CacheFacts:
    """What the universe checks read of one fxcache: its URI, instrument name, metadata and span."""

    uri: str
    name: str
    metadata: dict
    first_ns: int | None  # None: no bars
    last_ns: int | None


def instrument_name(uri: str, metadata: dict) -> str:
    """An instrument's name: the fxcache file's stem, or, for the pipeline's generic file name, the bars'."""
    stem = PurePosixPath(uri.rstrip("/")).name.split(".")[0]
    if stem and stem != PIPELINE_FXCACHE.split(".")[0]:
        return stem
    source = str(metadata.get("source_uri", ""))
    if source.startswith("sample://"):
        seed = re.search(r"seed=(\d+)", source)
        return f"sample-seed{seed.group(1)}" if seed else "sample"
    bars_stem = PurePosixPath(source.split(",")[0].rstrip("/")).name.split(".")[0]
    return bars_stem or stem or uri


def _first_pair(facts: Sequence[CacheFacts], key) -> tuple[CacheFacts, CacheFacts] | None:
    """The first two caches with the same `key(fact)` (None keys never match), or None."""
    seen: dict = {}
    for fact in facts:
        value = key(fact)
        if value is None:
            continue
        if value in seen:
            return seen[value], fact
        seen[value] = fact
    return None


def _check_distinct(facts: Sequence[CacheFacts]) -> None:
    once = "give each instrument once"
    checks = (
        (
            lambda f: f.name,
            "the instrument name {name!r} (its file's name up to the first dot) is also {other}'s",
            "rename one of the files",
        ),
        (lambda f: f.metadata.get("checksum"), "the same content as {other} (equal column checksums)", once),
        (
            lambda f: f.metadata.get("source_hash"),
            "built from the same bars as {other} (equal source hashes)",
            once,
        ),
    )
    for key, problem, remedy in checks:
        pair = _first_pair(facts, key)
        if pair is not None:
            first, second = pair
            said = problem.format(name=second.name, other=first.uri)
            raise BadInput(f"{second.uri}: duplicate instrument: {said}; {remedy}")


def _difference(mine: object, theirs: object) -> str:
    """How two values of a build key differ, short enough for one line."""
    if isinstance(mine, list) and isinstance(theirs, list):
        for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
            if a != b:
                return f"{a!r} at position {i} where it has {b!r}"
        return f"{len(mine)} names where it has {len(theirs)}"
    return f"{mine!r} where it has {theirs!r}"


def _check_built_alike(facts: Sequence[CacheFacts]) -> None:
    reference = facts[0]
    for fact in facts[1:]:
        for key in BUILD_KEYS:
            mine, theirs = fact.metadata.get(key), reference.metadata.get(key)
            if mine != theirs:
                raise BadInput(
                    f"{fact.uri}: {key} differs from {reference.uri}'s ({_difference(mine, theirs)}); "
                    "build every fxcache of a universe with the same foxhunt"
                )


def _check_overlap(facts: Sequence[CacheFacts]) -> None:
    spans = []
    for fact in facts:
        if fact.first_ns is None or fact.last_ns is None:
            raise BadInput(f"{fact.uri}: holds no bars")
        spans.append((fact.uri, fact.first_ns, fact.last_ns))
    check_overlap(spans)


def _time_groups(spans: Sequence[tuple[str, int, int]]) -> list[list[int]]:
    """The spans' indices in groups linked by shared time (a chain of overlaps joins a group), by start."""
    groups: list[list[int]] = []
    end = None
    for i in sorted(range(len(spans)), key=lambda k: spans[k][1]):
        if end is None or spans[i][1] > end:
            groups.append([])
            end = spans[i][2]
        groups[-1].append(i)
        end = max(end, spans[i][2])
    return groups


def check_overlap(spans: Sequence[tuple[str, int, int]]) -> None:
    """Refuse instruments that cannot share a fold (`spans`: each file's name and first and last bar, ns
    UTC): BadInput naming the first file that shares no time with any other, with its span and the others',
    or, where every file shares time with another, the groups that share none with each other."""
    groups = _time_groups(spans)
    if len(groups) < 2:
        return
    lone = sorted(group[0] for group in groups if len(group) == 1)
    if lone:
        uri, first, last = spans[lone[0]]
        others = [span for j, span in enumerate(spans) if j != lone[0]]
        lo, hi = min(a for _, a, _ in others), max(b for _, _, b in others)
        raise BadInput(
            f"{uri}: no time in common with any other instrument (it spans {iso_utc(first)} to "
            f"{iso_utc(last)}; the others {iso_utc(lo)} to {iso_utc(hi)})"
        )
    described = "; ".join(
        f"{{{', '.join(spans[i][0] for i in group)}}} from {iso_utc(min(spans[i][1] for i in group))} "
        f"to {iso_utc(max(spans[i][2] for i in group))}"
        for group in groups
    )
    raise BadInput(
        f"{spans[groups[1][0]][0]}: the instruments fall into {len(groups)} groups that share no time "
        f"with each other ({described}); a fold must hold instruments that trade together, so run each "
        "group on its own"
    )


def check_universe(facts: Sequence[CacheFacts]) -> None:
    """Refuse a universe of fxcaches that cannot be trained together: BadInput, one line naming the file."""
    if not facts:
        raise BadInput("a universe needs at least one fxcache")
    _check_distinct(facts)
    _check_built_alike(facts)
    _check_overlap(facts)


def read_universe(
    uris: Sequence[str], cache_dir: str | os.PathLike | None = None, names: Sequence[str] | None = None
) -> list[FxCache]:
    """Read and check each fxcache at `uris` (a list of `FxCache`); nothing is used before all pass.

    A missing file is FileNotFoundError, a damaged one FxCacheError, both naming the file; `names`
    replace the derived instrument names.
    """
    if names is not None and len(names) != len(uris):
        raise BadInput(f"{len(names)} instrument names for {len(uris)} fxcaches")
    caches = [read_fxcache(uri, cache_dir) for uri in uris]
    facts = [
        CacheFacts(
            uri=cache.uri,
            name=names[i] if names is not None else instrument_name(cache.uri, cache.metadata),
            metadata=cache.metadata,
            first_ns=int(cache.timestamp[0]) if len(cache) else None,
            last_ns=int(cache.timestamp[-1]) if len(cache) else None,
        )
        for i, cache in enumerate(caches)
    ]
    check_universe(facts)
    return caches
