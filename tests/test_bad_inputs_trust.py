"""Issue 24's bad inputs, as a table: each ends with its own one-line message and exit code, no
traceback, and writes nothing (no new --out; a used one exactly as it was).

Rows: the trust boundaries (compile cache, URLs, inputs inside --out), bounds before work, and the
faults that used to end in `unexpected error` (too few bars, a latin-1 header, a port in use, locks
naming impossible pids, an fxcache version given as a string, close/Close).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_bad_inputs import HEADER, fxcache_rewritten

from foxhunt.cli import main
from foxhunt.data.bars import generate_sample_bars, write_bars

RUN = ["--epochs", "1", "--train-days", "5", "--val-days", "2", "--step-days", "2", "--max-folds", "1"]
RUN += ["--device", "cpu"]


@dataclass
class Ctx:
    tmp: Path
    fxcache: Path
    port: int = 0

    @property
    def out(self) -> str:
        return str(self.tmp / "out")

    def file(self, name: str, content: str | bytes) -> str:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return str(path)

    def params(self, **dqn) -> str:
        return self.file("params.json", json.dumps({"dqn": {"hidden": 16, "batch_size": 256, **dqn}}))


@dataclass(frozen=True)
class Row:
    name: str
    argv: Callable[[Ctx], list[str]]
    code: int
    message: str  # a regex the single stderr line must match
    env: dict[str, str | None] = field(default_factory=dict)


def train(*extra: str, fxcache: Callable[[Ctx], str] | None = None, **dqn) -> Callable[[Ctx], list[str]]:
    def build(ctx: Ctx) -> list[str]:
        source = fxcache(ctx) if fxcache else str(ctx.fxcache)
        return [
            "train",
            "--fxcache",
            source,
            "--out",
            ctx.out,
            "--hyperopt-params",
            ctx.params(**dqn),
            *RUN,
            *extra,
        ]

    return build


def pipeline_bars(make: Callable[[Ctx], str]) -> Callable[[Ctx], list[str]]:
    return lambda ctx: ["pipeline", "--bars", make(ctx), "--out", ctx.out, *RUN]


def sample_bars(n: int) -> Callable[[Ctx], str]:
    def build(ctx: Ctx) -> str:
        path = ctx.tmp / f"b{n}.csv"
        write_bars(generate_sample_bars(n, seed=1), path)
        return str(path)

    return build


def with_lock(pid: str) -> Callable[[Ctx], list[str]]:
    def build(ctx: Ctx) -> list[str]:
        lock = {"run_id": "x", "pid": "PID", "host": socket.gethostname(), "started_at": "t", "token": "k"}
        ctx.file("out/run.lock", json.dumps(lock).replace('"PID"', pid))
        return train()(ctx)

    return build


def fxcache_inside_out(ctx: Ctx) -> str:
    return ctx.file("out/fold_3/in.fxcache", ctx.fxcache.read_bytes())


def space(ctx: Ctx) -> list[str]:
    path = ctx.file(
        "space.json", json.dumps({"lr": {"type": "float", "low": 1e-300, "high": 1e300, "log": True}})
    )
    return [*train("--trials", "2", "--search-space", path)(ctx)]


def study(url: str) -> Callable[[Ctx], list[str]]:
    return lambda ctx: train(
        "--trials", "1", "--study-storage", url.replace("TMP", str(ctx.tmp)), "--study-name", "s"
    )(ctx)


def longer_validation(argv: list[str]) -> list[str]:
    argv[argv.index("--val-days") + 1] = "10000"
    return argv


def text_file(ctx: Ctx) -> str:
    return ctx.file("notes.db", "root:x:0:0:root:/root:/bin/bash\n")


# fmt: off
ROWS = [
    Row("100_bars", pipeline_bars(sample_bars(100)), 2, r"b100\.csv: 100 bars give no feature rows: need more than 300"),
    Row("300_bars", pipeline_bars(sample_bars(300)), 2, r"b300\.csv: 300 bars give no feature rows"),
    Row("latin1_header", pipeline_bars(lambda c: c.file("latin.csv", (HEADER.strip() + ",caf\xe9\n").encode("latin-1"))),
        2, r"latin\.csv: the header is not UTF-8 \(byte 0xe9\)"),
    Row("close_and_Close", pipeline_bars(lambda c: c.file("cc.csv", "timestamp,open,high,low,close,Close,volume\n")),
        2, r"cc\.csv: columns 'close' and 'Close' differ only in case"),
    Row("format_version_string", train(fxcache=fxcache_rewritten("v.fxcache", format_version="1")),
        2, r"v\.fxcache: format version '1' is a str, expected the number 1"),
    Row("metrics_port_in_use", lambda c: train("--metrics-port", str(c.port))(c),
        2, r"metrics_port \d+: cannot serve /metrics there \(Address already in use\)"),
    Row("lock_pid_abc", with_lock('"abc"'), 2, r"run\.lock: held by an unreadable lock \(not one a run writes"),
    Row("lock_pid_2_40", with_lock(str(2**40)), 2, r"run\.lock: held by an unreadable lock.*heartbeat"),
    Row("pushgateway_not_a_url", train("--pushgateway", "not a url"), 2, r"pushgateway \(not a URL\) holds a space"),
    Row("pushgateway_ftp", train("--pushgateway", "ftp://push:9091"), 2, r"pushgateway ftp://push:9091 has scheme 'ftp'"),
    Row("study_mysql", study("mysql://u:pw@db/x"), 2, r"study storage mysql://u:\*\*\*@db/x: uses mysql, for which"),
    Row("study_sqlite_not_a_db", lambda c: study(f"sqlite:///{text_file(c)}")(c), 2, r"notes\.db, which is not an SQLite database"),
    Row("study_bare_at", study("postgresql://u:p@ss@db/x"), 2, r"password with a bare '@'; percent-encode it as %40"),
    Row("batch_size_2_63", train(batch_size=2**63), 2, r"batch_size must be an integer in \[1, 16777216\]"),
    Row("hidden_1e6", train(hidden=10**6), 2, r"hidden must be an integer in \[1, 16384\]"),
    Row("steps_per_epoch_1e9", train(steps_per_epoch=10**9), 2, r"steps_per_epoch must be an integer in \[0, 10000000\]"),
    Row("search_lr_1e300", space, 2, r"space\.json: lr: high 1e\+300 is outside what lr allows"),
    Row("memory_too_small", train(hidden=16384, batch_size=2**24), 2, r"^.*batch_size: this run needs about .* lower batch_size"),
    Row("val_days_10000", lambda c: longer_validation(train()(c)), 2, r"val_days 10000 is longer than the data"),
    Row("compile_cache_unsigned", train("--compile-cache", "/tmp/steps"), 2, r"FOXHUNT_COMPILE_CACHE_KEY is not set",
        env={"FOXHUNT_COMPILE_CACHE_KEY": None}),
    Row("compile_cache_key_short", train(), 2, r"FOXHUNT_COMPILE_CACHE_KEY is set but is 5 bytes; a signing key needs at least 16",
        env={"FOXHUNT_COMPILE_CACHE_KEY": "short"}),
    Row("fxcache_inside_out", train(fxcache=fxcache_inside_out), 2, r"in\.fxcache: an input inside --out"),
]
# fmt: on


def listing(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_a_bad_input_ends_in_one_line_with_its_exit_code_and_writes_nothing(
    row, tmp_path, tiny_fxcache, busy_port, monkeypatch, capsys
):
    for name in ("FOXHUNT_PUSHGATEWAY", "FOXHUNT_RUN_ID", "ARGO_WORKFLOW_NAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in row.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    ctx = Ctx(tmp_path, tiny_fxcache, busy_port)
    argv = row.argv(ctx)
    out = Path(ctx.out)
    before = listing(out) if out.exists() else None
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert (code, len(lines)) == (row.code, 1), err
    assert re.search(row.message, lines[0]), lines[0]
    assert "Traceback" not in err and "unexpected error" not in err
    assert (listing(out) if out.exists() else None) == before


def test_every_row_has_its_own_message():
    assert len({r.message for r in ROWS}) == len(ROWS) and len({r.name for r in ROWS}) == len(ROWS)
