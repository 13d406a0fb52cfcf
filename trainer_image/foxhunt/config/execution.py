"""The execution model's settings, checked without numpy (the light CLI builds them): see `foxhunt.evaluate.execution`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FILLS = ("close", "next_open")


@dataclass(frozen=True)
class ExecutionSettings:
    """The execution model's settings beyond `Scoring.cost` and `Scoring.spread` (see `foxhunt.evaluate.execution`)."""

    spread_points: float = 0.0
    first_close: float = 0.0
    session: str = ""
    session_zone: str = "UTC"
    off_session_factor: float = 1.0
    slippage: float = 0.0
    fill: str = "close"
    financing: float = 0.0

    def __post_init__(self) -> None:
        for name in ("spread_points", "slippage", "financing", "first_close"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} {getattr(self, name)}: must be ≥ 0")
        if not self.off_session_factor >= 1:
            raise ValueError(f"off_session_factor {self.off_session_factor}: must be ≥ 1")
        if self.fill not in FILLS:
            raise ValueError(f"fill {self.fill!r}: expected one of {', '.join(FILLS)}")
        if self.spread_points > 0 and not self.first_close > 0:
            raise ValueError("spread_points needs first_close (the close of the first loaded bar) > 0")
        session_minutes(self.session)  # raises on a malformed session
        check_zone(self.session_zone)

    @property
    def is_plain(self) -> bool:
        """True when nothing here changes a record's P&L (the flat cost and spread of `Scoring` alone)."""
        return (
            self.spread_points == 0
            and self.slippage == 0
            and self.financing == 0
            and self.fill == "close"
            and (not self.session or self.off_session_factor == 1)
        )


def session_minutes(session: str) -> tuple[int, int] | None:
    """("HH:MM-HH:MM") → (start, end) minutes after local midnight (the session's time zone); None for ""
    (every bar is in session)."""
    if not session:
        return None
    # Two ASCII digits a field: int() alone would take "+9:5", "1_3:00" or other scripts' digits.
    times = re.fullmatch(r"\s*([0-9]{2}):([0-9]{2})\s*-\s*([0-9]{2}):([0-9]{2})\s*", session)
    if times is None or any(int(v) > top for v, top in zip(times.groups(), (23, 59, 23, 59), strict=True)):
        raise ValueError(f"session {session!r}: expected HH:MM-HH:MM, e.g. 13:30-20:00")
    h0, m0, h1, m1 = (int(v) for v in times.groups())
    out = [h0 * 60 + m0, h1 * 60 + m1]
    if out[0] == out[1]:
        raise ValueError(f"session {session!r}: start and end are the same minute")
    return out[0], out[1]


def check_zone(zone: str) -> None:
    """Raise ValueError unless `zone` names an IANA time zone this machine knows ("UTC" always does)."""
    if zone == "UTC":
        return
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"session_zone {zone!r}: not an IANA time zone known here, e.g. America/New_York (the zone data "
            "comes from the system's tzdata or the `tzdata` Python package)"
        ) from None
