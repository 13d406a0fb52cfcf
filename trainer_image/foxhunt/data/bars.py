"""OHLCV bars: read CSV (also gzipped) or Parquet, local or in object storage, validate, and generate samples.

Timestamps may be a timestamp column (naive ones are UTC, or in the zone `tz` names), ISO-8601 text, or
integers counting `timestamp_unit`s since the Unix epoch; integers without a declared unit are refused
rather than guessed (seconds read as nanoseconds put every bar on 1970-01-01).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from foxhunt import storage
from foxhunt.config import NS_PER_DAY
from foxhunt.errors import BadInput, UsageError

BAR_COLUMNS = ("timestamp", "open", "high", "low", "close", "volume")
PRICE_COLUMNS = ("open", "high", "low", "close")
NS_PER_MINUTE = NS_PER_DAY // 1440
TIMESTAMP_UNITS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
# Integer timestamps that land before this are read with the wrong unit (minute bars from 1970 are not a thing).
_PLAUSIBLE_FROM_NS = 365 * NS_PER_DAY


class BarsError(BadInput):
    """Bad bar data; the message names the file, the row and the rule (exit 2)."""

    def __init__(self, message: str, row: int | None = None, ordering: bool = False) -> None:
        super().__init__(message)
        self.row = row
        self.ordering = ordering  # a duplicate or unsorted timestamp


@dataclass(frozen=True)
class Bars:
    """Bars in time order: `timestamp` int64 ns UTC, prices and volume float64."""

    timestamp: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    source: str = ""  # the URIs read, comma-separated
    # One file: the sha256 of its bytes; several: the sha256 of their hex digests joined in reading order.
    content_hash: str = ""

    def __len__(self) -> int:
        return len(self.timestamp)


def iso_utc(ns: int) -> str:
    """An int64 ns UTC timestamp as ISO-8601 to the second, with a Z."""
    return str(np.datetime64(int(ns), "ns").astype("datetime64[s]")) + "Z"


def _fail(uri: str, row: int, ts: int | None, rule: str, ordering: bool = False) -> BarsError:
    where = f"row {row}" + (f" ({iso_utc(ts)})" if ts is not None else "")
    return BarsError(f"{uri}: {where}: {rule}", row=row, ordering=ordering)


def check_reading_options(tz: str | None, timestamp_unit: str | None) -> None:
    """Refuse an unknown time zone or timestamp unit before any file is read (UsageError)."""
    if timestamp_unit is not None and timestamp_unit not in TIMESTAMP_UNITS:
        raise UsageError(f"timestamp unit {timestamp_unit!r}: expected one of {', '.join(TIMESTAMP_UNITS)}")
    if tz:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise UsageError(
                f"time zone {tz!r} is unknown (expected an IANA name such as Europe/London)"
            ) from exc


def _integer_ns(values, uri: str, unit: str | None):
    import pyarrow as pa
    import pyarrow.compute as pc

    if unit is None:
        raise BarsError(
            f"{uri}: column 'timestamp' holds integers ({values.type}); declare what they count with "
            f"--timestamp-unit {'|'.join(TIMESTAMP_UNITS)} (seconds, milliseconds, microseconds or "
            "nanoseconds since 1970-01-01 UTC)"
        )
    try:
        ns = pc.multiply_checked(values.cast(pa.int64()), TIMESTAMP_UNITS[unit])
    except pa.ArrowInvalid as exc:
        raise BarsError(f"{uri}: column 'timestamp': integers too large for unit '{unit}'") from exc
    first = pc.min(ns).as_py()
    if first is not None and first < _PLAUSIBLE_FROM_NS:
        raise BarsError(
            f"{uri}: column 'timestamp' read in unit '{unit}' starts at {iso_utc(first)}; "
            "is the timestamp unit right?"
        )
    return ns


def _timestamps_ns(column, uri: str, tz: str | None, unit: str | None) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        if column.type.tz is None and tz and tz.upper() != "UTC":
            # Naive clock times are UTC unless the caller says which zone they were written in.
            column = pc.assume_timezone(column, timezone=tz, ambiguous="earliest", nonexistent="earliest")
        values = column.cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64())
    elif pa.types.is_integer(column.type):
        values = _integer_ns(column, uri, unit)
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        try:
            parsed = pc.strptime(column, format="%Y-%m-%dT%H:%M:%S", unit="ns", error_is_null=False)
        except pa.ArrowInvalid as exc:
            raise BarsError(f"{uri}: column 'timestamp' is text that is not ISO-8601") from exc
        return _timestamps_ns(parsed, uri, tz, unit)
    else:
        raise BarsError(
            f"{uri}: column 'timestamp' has type {column.type}; expected timestamps, ISO-8601 text, "
            f"or integers with a declared unit ({', '.join(TIMESTAMP_UNITS)})"
        )
    if values.null_count:
        row = int(np.flatnonzero(np.asarray(values.is_null()))[0])
        raise _fail(uri, row, None, "timestamp is missing")
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)


def _dst_note(naive, tz: str, row: int) -> str:
    """Why naive local times around `row` cannot be ordered in `tz`, or '' when DST is not the reason."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for r in (row, row - 1):
        if r < 0:
            continue
        value = naive.slice(r, 1)
        shown = str(value[0].as_py()).replace(" ", "T")
        for problem, options in (
            ("fold", {"ambiguous": "raise", "nonexistent": "earliest"}),
            ("gap", {"ambiguous": "earliest", "nonexistent": "raise"}),
        ):
            try:
                pc.assume_timezone(value, timezone=tz, **options)
            except pa.ArrowInvalid:
                if problem == "fold":
                    return (
                        f"; {shown} occurs twice in {tz} (clocks go back an hour when summer time ends), "
                        "so naive local times repeat there and cannot be ordered: write timestamps in UTC "
                        "or with their UTC offset"
                    )
                return (
                    f"; {shown} does not exist in {tz} (clocks jump forward an hour when summer time "
                    f"starts), so these naive times were not written in {tz}"
                )
    return ""


def _read_table(uri: str, data: bytes):
    """Parse the file's bytes (read once: they are also what the content hash covers).

    Single-threaded on purpose: pyarrow's threaded readers aborted the process (exit 134) in one run
    in ten (CSV) to one in three (Parquet) when torch was imported before pyarrow.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if not data:
        raise BarsError(f"{uri}: empty file")
    suffixes = [s.lower() for s in PurePosixPath(uri).suffixes]
    try:
        if ".parquet" in suffixes or ".pq" in suffixes:
            # Not pq.read_table: it goes through pyarrow.dataset, whose thread pools aborted the process
            # at exit ("terminate called without an active exception") one run in three with torch loaded.
            return pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(use_threads=False)
        if ".csv" in suffixes:
            source = pa.BufferReader(data)
            if suffixes[-1] == ".gz" or data[:2] == b"\x1f\x8b":  # gzip, whatever the name says
                source = pa.CompressedInputStream(source, "gzip")
            convert = pacsv.ConvertOptions(column_types={c: pa.float64() for c in BAR_COLUMNS[1:]})
            read = pacsv.ReadOptions(use_threads=False)
            return pacsv.read_csv(source, read_options=read, convert_options=convert)
    except Exception as exc:  # pyarrow's parse errors already say what; we add which file
        raise BarsError(f"{uri}: cannot parse: {' '.join(str(exc).split())}") from exc
    raise BarsError(f"{uri}: unknown format (expected .csv, .csv.gz or .parquet)")


def read_bars_file(uri: str, tz: str | None = None, timestamp_unit: str | None = None) -> tuple[Bars, str]:
    """Read and validate one bars file; returns the bars and the sha256 of its bytes."""
    read: list[bytes] = []

    def verify(path: Path) -> str:
        read.append(path.read_bytes())  # kept: parsed below without reading the file again
        return hashlib.sha256(read[-1]).hexdigest()

    storage.fetch_cached(uri, verify)
    data = read[-1]
    table = _read_table(uri, data)
    names = _column_names(table, uri)
    missing = [c for c in BAR_COLUMNS if c not in names]
    if missing:
        raise BarsError(
            f"{uri}: missing column(s) {', '.join(missing)}; found {', '.join(table.column_names)}"
        )
    if table.num_rows == 0:
        raise BarsError(f"{uri}: empty file (no rows)")
    stamps = table.column(names["timestamp"])
    ts = _timestamps_ns(stamps, uri, tz, timestamp_unit)
    cols = {}
    for c in BAR_COLUMNS[1:]:
        col = table.column(names[c])
        try:
            cols[c] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise BarsError(f"{uri}: column '{c}' is not numeric ({col.type})") from exc
    bars = Bars(ts, cols["open"], cols["high"], cols["low"], cols["close"], cols["volume"], uri)
    try:
        validate_bars(bars, uri)
    except BarsError as exc:
        naive = stamps.combine_chunks() if _is_naive(stamps) and tz and tz.upper() != "UTC" else None
        note = (
            _dst_note(naive, tz, exc.row)
            if exc.ordering and naive is not None and tz and exc.row is not None
            else ""
        )
        if note:
            raise BarsError(f"{exc}{note}", row=exc.row, ordering=True) from exc
        raise
    return bars, hashlib.sha256(data).hexdigest()


def _column_names(table, uri: str) -> dict[str, str]:
    """The table's column names by their lower-case form; BarsError for a header that is not UTF-8 or
    two names that differ only in case (`close` and `Close`: which one is the close?)."""
    try:
        given = list(table.column_names)
    except UnicodeDecodeError as exc:
        raise BarsError(
            f"{uri}: the header is not UTF-8 (byte {exc.object[exc.start]:#04x}); save it as UTF-8"
        ) from exc
    names: dict[str, str] = {}
    for name in given:
        if name.lower() in names:
            raise BarsError(
                f"{uri}: columns {names[name.lower()]!r} and {name!r} differ only in case; keep one of them"
            )
        names[name.lower()] = name
    return names


def _is_naive(column) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(column.type) and column.type.tz is None


def validate_bars(bars: Bars, uri: str) -> None:
    """Raise BarsError naming the first row that breaks a rule of the bars contract."""
    ts = bars.timestamp

    def first(mask: np.ndarray, rule: str, offset: int = 0) -> None:
        bad = np.flatnonzero(mask)
        if bad.size:
            row = int(bad[0]) + offset
            raise _fail(uri, row, int(ts[row]), rule, ordering=offset == 1)

    for name in BAR_COLUMNS[1:]:
        values = getattr(bars, name)
        first(~np.isfinite(values), f"{name} is NaN or infinite")
    for name in PRICE_COLUMNS:
        first(getattr(bars, name) <= 0, f"{name} must be positive")
    first(bars.volume < 0, "volume must be non-negative")
    first(bars.high < bars.low, "high < low")
    first(bars.high < np.maximum(bars.open, bars.close), "high < max(open, close)")
    first(bars.low > np.minimum(bars.open, bars.close), "low > min(open, close)")
    step = np.diff(ts)
    first(step == 0, "duplicate timestamp (same as the row before)", offset=1)
    first(step < 0, "timestamps not sorted (earlier than the row before)", offset=1)


def read_bars(
    uris: list[str] | tuple[str, ...], tz: str | None = None, timestamp_unit: str | None = None
) -> Bars:
    """Read bars from one or more files, concatenated in time order; overlaps are errors.

    `tz`: the zone of naive timestamps (default UTC); `timestamp_unit`: what integer timestamps count
    (s, ms, us or ns since the epoch), required when they are integers.
    """
    if not uris:
        raise BarsError("no bars given")
    check_reading_options(tz, timestamp_unit)
    parts = sorted(
        (read_bars_file(u, tz, timestamp_unit) + (u,) for u in uris), key=lambda p: int(p[0].timestamp[0])
    )
    for (prev, _, prev_uri), (nxt, _, uri) in zip(parts, parts[1:], strict=False):
        if nxt.timestamp[0] <= prev.timestamp[-1]:
            raise _fail(
                uri,
                0,
                int(nxt.timestamp[0]),
                f"overlaps {prev_uri}, which ends at {iso_utc(prev.timestamp[-1])}",
            )
    digest = (
        hashlib.sha256("".join(h for _, h, _ in parts).encode()).hexdigest()
        if len(parts) > 1
        else parts[0][1]
    )
    cat = {c: np.concatenate([getattr(p[0], c) for p in parts]) for c in BAR_COLUMNS}
    return Bars(**cat, source=",".join(u for _, _, u in parts), content_hash=digest)


def generate_sample_bars(
    n_bars: int = 200_000,
    seed: int = 0,
    *,
    start: str = "2024-01-01T00:00:00",
    ar_coef: float | None = None,
    sigma: float | None = None,
    news_rate: float | None = None,
    news_drift: float | None = None,
    news_bars: int | None = None,
    news_jump: float | None = None,
    signal: bool = True,
    timestamps: np.ndarray | None = None,
) -> Bars:
    """Deterministic minute bars (weekdays only) with a planted signal, as `foxhunt.data.sample` says.

    Defaults (None): 4 bp per minute of noise and news bars every 250 minutes on average whose
    direction drifts on for 60 bars. `signal=False` plants nothing predictable (no drift, no
    autocorrelation) in otherwise the same bars. `news_rate=0, ar_coef=0.3, sigma=1e-3` reproduces
    the old AR(1) sample bars exactly. `timestamps` (int64 ns, increasing, `n_bars` of them) replace the
    weekday minutes from `start` (`foxhunt.data.sample` has calendars); they enter the content hash.
    """
    from foxhunt.data import sample as sd

    params: dict[str, Any] = {
        "ar_coef": sd.SAMPLE_AR_COEF if ar_coef is None else ar_coef,
        "sigma": sd.SAMPLE_SIGMA if sigma is None else sigma,
        "news_rate": sd.SAMPLE_NEWS_RATE if news_rate is None else news_rate,
        "news_drift": sd.SAMPLE_NEWS_DRIFT if news_drift is None else news_drift,
        "news_bars": sd.NEWS_BARS if news_bars is None else news_bars,
        "news_jump": sd.NEWS_JUMP_SIGMAS if news_jump is None else news_jump,
    }
    if not signal:
        params.update(ar_coef=0.0, news_drift=0.0)
    rng = np.random.default_rng(seed)
    ts = sd.fx_minutes(n_bars, start) if timestamps is None else np.asarray(timestamps, dtype=np.int64)
    if ts.shape != (n_bars,) or bool(np.any(np.diff(ts) <= 0)):
        raise ValueError(f"timestamps must be {n_bars} increasing int64 ns, got shape {ts.shape}")
    planted = sd.planted_returns(n_bars, rng, np.random.default_rng((seed, 1)), **params)
    close = 1.1 * np.exp(np.cumsum(planted.returns))
    open_ = np.empty_like(close)
    open_[0] = 1.1
    open_[1:] = close[:-1]
    wick = np.abs(rng.standard_normal((2, n_bars))) * params["sigma"] * 0.5
    high = np.maximum(open_, close) * np.exp(wick[0])
    low = np.minimum(open_, close) * np.exp(-wick[1])
    volume = np.floor(rng.lognormal(4.0, 1.0, n_bars) * np.where(planted.news, sd.NEWS_VOLUME_FACTOR, 1.0))
    planted_key = ":".join(f"{k}={v!r}" for k, v in params.items())
    calendar = "" if timestamps is None else hashlib.sha256(ts.tobytes()).hexdigest()[:16]
    calendar_key = f":{calendar}" if calendar else ""  # empty for the weekday minutes: old hashes hold
    digest = hashlib.sha256(
        f"sample:{n_bars}:{seed}:{start}:{planted_key}{calendar_key}".encode()
    ).hexdigest()
    source = f"sample://n={n_bars},seed={seed}" + ("" if signal else ",signal=off")
    source += f",calendar={calendar}" if calendar else ""
    return Bars(ts, open_, high, low, close, volume, source=source, content_hash=digest)


def write_bars(bars: Bars, uri: str | Path) -> None:
    """Write bars as Parquet (timestamps tz-aware UTC) or CSV (ISO-8601 UTC), by suffix, atomically."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "timestamp": pa.array(bars.timestamp, type=pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
            **{c: pa.array(getattr(bars, c)) for c in BAR_COLUMNS[1:]},
        }
    )
    with storage.staged_write(uri) as tmp:
        if PurePosixPath(str(uri)).suffix.lower() == ".csv":
            pacsv.write_csv(table, str(tmp))
        else:
            pq.write_table(table, str(tmp))
