"""Several instruments in one pipeline: the bars list, its checks, and the pods' argument expansion.

`train-pipeline`'s `bars-uri` is one s3:// URI (one instrument, as before) or a JSON list of them, one
per instrument. With a list, `fxcache-uri` is a folder and instrument i's cache is
`<fxcache-uri>/<name>.fxcache`, its name being the bars file's name up to the first dot
(`s3://data/EURUSD.parquet` → `EURUSD`), so two instruments may not share a name.

The pipeline's first pod (`plan`, below) turns the two parameters into the items Argo fans the
precompute pods out over, and the JSON list of caches the training pod takes. A container argument is
one word, and Argo cannot make one parameter into several; so the GPU pods run `python -m
foxhunt_workflows.instruments train ...`, which replaces `--fxcache '[A, B]'` by `--fxcache A
--fxcache B` and then runs `foxhunt` with the result (no shell; a single URI passes through as it is).

`foxhunt submit` runs the same checks (`check_bars`) before it sends anything. Imports nothing heavy.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

MAX_INSTRUMENTS = 64  # one H200 holds 32 at two years of minute bars; the cap leaves room and stops typos
S3_OBJECT = re.compile(r"^s3://[^/\s]+/.+$")  # the pipeline's bars-uri schema, entry by entry
FXCACHE_SUFFIX = ".fxcache"
LAUNCHER = ("python", "-m", "foxhunt_workflows.instruments")  # the pods' command that expands the list
ITEMS_FILE = "instruments.json"  # the plan's outputs, in its outputs folder
FXCACHES_FILE = "fxcache_uris.json"


class InstrumentsError(ValueError):
    """A bars or cache list that cannot be run; the message is one line naming the bad entry."""


def is_list(value: str) -> bool:
    """Whether a parameter value is the JSON-list form (else one URI)."""
    return value.lstrip().startswith("[")


def parse_uris(value: str, what: str = "bars-uri") -> list[str]:
    """One URI, or the URIs of a JSON list of strings."""
    if not is_list(value):
        return [value]
    try:
        uris = json.loads(value)
    except json.JSONDecodeError as error:
        raise InstrumentsError(f"{what}: not a JSON list ({error.msg})") from None
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise InstrumentsError(f"{what}: a JSON list of URI strings is expected")
    return uris


def instrument_name(uri: str) -> str:
    """An instrument's name: its bars file's name up to the first dot."""
    return uri.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]


def check_bars(uris: Sequence[str], what: str = "bars-uri") -> None:
    """Refuse an empty list, too many instruments, a URI that is not s3://BUCKET/KEY, and duplicates
    (the same URI, or two files that give one instrument name); one line naming the bad entry."""
    if not uris:
        raise InstrumentsError(f"{what}: the list is empty; give at least one bars URI")
    if len(uris) > MAX_INSTRUMENTS:
        raise InstrumentsError(f"{what}: {len(uris)} instruments, more than the limit of {MAX_INSTRUMENTS}")
    seen: dict[str, str] = {}
    for i, uri in enumerate(uris):
        if not S3_OBJECT.match(uri):
            raise InstrumentsError(f"{what}[{i}] {uri!r}: not an s3://BUCKET/KEY URI (the pods read only s3)")
        name = instrument_name(uri)
        if not name:
            raise InstrumentsError(f"{what}[{i}] {uri!r}: its file name gives no instrument name")
        if name in seen:
            same = "appears twice" if seen[name] == uri else f"has the same instrument name as {seen[name]!r}"
            raise InstrumentsError(f"{what}[{i}] {uri!r}: {same} ({name})")
        seen[name] = uri


def plan(bars: str, fxcache: str) -> list[dict[str, str]]:
    """The instruments as {"name", "bars", "fxcache"}: one bars URI keeps its cache URI as given; a list
    puts each cache at `<fxcache>/<name>.fxcache`."""
    uris = parse_uris(bars)
    check_bars(uris)
    if not is_list(bars):
        return [{"name": instrument_name(bars), "bars": bars, "fxcache": fxcache}]
    if is_list(fxcache):
        raise InstrumentsError("fxcache-uri: with a list of bars it is the folder of the caches, not a list")
    folder = fxcache.rstrip("/")
    return [
        {"name": instrument_name(u), "bars": u, "fxcache": f"{folder}/{instrument_name(u)}{FXCACHE_SUFFIX}"}
        for u in uris
    ]


def expand_fxcache(args: Sequence[str]) -> list[str]:
    """`args` with each `--fxcache '[A, B]'` made into `--fxcache A --fxcache B` (a single URI as it is)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--fxcache" and i + 1 < len(args) and is_list(args[i + 1]):
            uris = parse_uris(args[i + 1], "--fxcache")
            check_bars(uris, "--fxcache")
            out += [word for uri in uris for word in ("--fxcache", uri)]
            i += 2
        else:
            out.append(args[i])
            i += 1
    return out


def write_plan(bars: str, fxcache: str, folder: Path) -> None:
    """The plan's two outputs: the fan-out's items and the training pod's JSON list of caches."""
    items = plan(bars, fxcache)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ITEMS_FILE).write_text(json.dumps(items, separators=(",", ":")))
    (folder / FXCACHES_FILE).write_text(json.dumps([i["fxcache"] for i in items], separators=(",", ":")))


def main(argv: Sequence[str] | None = None) -> int:
    """`plan --bars V --fxcache V --out DIR` writes the plan; anything else runs `foxhunt` on the
    expanded arguments. Bad lists exit 2 with one line."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["plan"]:
            options = dict(zip(args[1::2], args[2::2], strict=False))
            write_plan(options["--bars"], options["--fxcache"], Path(options["--out"]))
            return 0
        expanded = expand_fxcache(args)
    except (InstrumentsError, KeyError) as error:
        print(f"foxhunt: error: {error}", file=sys.stderr)
        return 2
    os.execvp("foxhunt", ["foxhunt", *expanded])  # replaces this process: signals reach the trainer
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
