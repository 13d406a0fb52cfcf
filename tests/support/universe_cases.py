"""The sample universes of the universe tests: generated instruments written as fxcaches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from foxhunt.data.features import compute_features
from foxhunt.data.fxcache import write_fxcache
from foxhunt.data.sample_universe import generate_universe
from foxhunt.run.lock import OutLock


def three_instruments(days: int) -> list[tuple[str, object]]:
    """fx00 and exchange01 over the same `days` (FX hours, an exchange's sessions); `late`, an FX instrument
    whose bars start 4 days later."""
    bars = generate_universe(2, n_bars=days * 1440, seed=5, calendars=("fx", "exchange"))
    (late,) = generate_universe(1, n_bars=(days - 4) * 1440, seed=9, start="2024-01-05T00:00:00")
    return [*bars, ("late", late[1])]


def write_caches(folder: Path, instruments: list[tuple[str, object]]) -> dict[str, str]:
    """Each (name, bars) precomputed to `folder/<name>.fxcache` (a name may hold a subfolder); name → path."""
    uris = {}
    for name, bars in instruments:
        path = folder / f"{name}.fxcache"
        path.parent.mkdir(parents=True, exist_ok=True)
        uris[name] = str(path)
        write_fxcache(uris[name], compute_features(bars), source_uri=f"sample://{name}", source_hash=name)
    return uris


def while_held(out: Path, command: Callable[[], int]) -> int:
    """`command`'s exit code while another live run ("another-run", this process: a fresh lock) holds `out`."""
    holder = OutLock(str(out), "another-run")
    holder.acquire()
    try:
        return command()
    finally:
        holder.release()


def guard_fires(member: int, fold: int, patch) -> str:
    """Member `member`'s divergence guard fires in each epoch of fold `fold` (`patch`: a pytest
    MonkeyPatch), as a |Q| past `q_limit` makes it: the trainer records the failure and hands no figures for
    the member, as `DQNTrainer.train_epoch` does. The failure's message."""
    from foxhunt.train import DQNTrainer, TrainingDiverged

    train_epoch = DQNTrainer.train_epoch
    message = f"fold {fold} epoch 0: |Q| reached 1e+09 (limit 100)"

    def diverging(self, epoch, epochs, active=None, *args, **kwargs):
        figures = train_epoch(self, epoch, epochs, active, *args, **kwargs)
        if self.window.fold.fold == fold and member in (range(self.size) if active is None else active):
            self.failures[member] = self.failures[member] or TrainingDiverged(message)
            figures[member] = None
        return figures

    patch.setattr(DQNTrainer, "train_epoch", diverging)
    return message
