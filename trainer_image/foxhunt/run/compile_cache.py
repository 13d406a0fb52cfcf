"""Compiled-step artifacts kept in object storage beside the fxcache, so a fresh pod skips Inductor.

A pod that starts on a new node has no local Inductor cache: tracing, compiling and autotuning
the training step costs seconds every run. PyTorch can serialise what it compiled
(`torch.compiler.save_cache_artifacts`) and load it into a fresh process before compiling
(`torch.compiler.load_cache_artifacts`), which turns the compile into cache hits. The blob is
keyed by everything that changes the generated code: torch and CUDA versions, the GPU, the
Python version, the step's shapes and the trainer's own source. It is stored beside the
fxcache (`<fxcache>.torch-compile/<key>.bin`, or under the folder `--compile-cache` names) with
its sha256 in a sidecar object (`<key>.bin.sha256`), and a blob that fails its checksum is
ignored, never loaded. A cache that cannot be read or written costs a compile, never the run.

Trust: loading artifacts runs code they contain, like loading the image does; anyone who can
write the data bucket can already replace the fxcache. Pass `--compile-cache off` where the
bucket is less trusted than the image.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from foxhunt import storage

log = logging.getLogger(__name__)

_TRAINER_DIR = Path(__file__).resolve().parents[1] / "train"  # the train stage: the step's code
AUTO, OFF = "auto", "off"


def _source_digest() -> str:
    """sha256 over the train stage's source: a code change must not reuse old kernels."""
    digest = hashlib.sha256()
    for path in sorted(_TRAINER_DIR.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def step_shapes(dqn, rows: int, n_features: int, replay_rows: int) -> dict:
    """The step's shapes: its settings and the sizes of the device buffers it reads (static in the graph)."""
    from foxhunt.train.settings import SHAPE_FIELDS

    return {
        **{name: getattr(dqn, name) for name in SHAPE_FIELDS},
        "rows": int(rows),
        "n_features": int(n_features),
        "replay_rows": int(replay_rows),
    }


def cache_key(step_shapes: dict) -> str:
    """A short hex key for the compiled step: toolchain, device and shapes."""
    import torch

    device = "cpu"
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        device = f"{props.name}-sm{props.major}{props.minor}"
    parts = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "device": device,
        "shapes": step_shapes,
        "source": _source_digest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def beside_fxcache(fxcache_uri: str) -> str:
    """The folder of compiled steps beside the fxcache (`--compile-cache auto`)."""
    return f"{str(fxcache_uri).rstrip('/')}.torch-compile"


def cache_folder(setting: str, fxcache_uri: str) -> str | None:
    """Where compiled steps live for `--compile-cache SETTING`: beside the fxcache (auto), a folder, or None."""
    if setting == OFF:
        return None
    if setting == AUTO:
        return beside_fxcache(fxcache_uri)
    return setting


def artifact_uri(fxcache_uri: str, key: str) -> str:
    """Where the compiled step for `key` lives, beside the fxcache."""
    return storage.join(beside_fxcache(fxcache_uri), f"{key}.bin")


def load(uri: str) -> bool:
    """Load compiled artifacts from `uri` into this process; False when absent or not trusted."""
    import torch

    checksum_uri = f"{uri}.sha256"
    try:
        if not (storage.exists(uri) and storage.exists(checksum_uri)):
            return False
        blob = storage.read_bytes(uri)
        expected = storage.read_bytes(checksum_uri).decode().strip()
    except Exception as exc:  # any storage fault: a cache we cannot read only costs a compile
        log.warning("compile cache %s not read: %s", uri, exc)
        return False
    if hashlib.sha256(blob).hexdigest() != expected:
        log.warning("compile cache %s ignored: checksum mismatch", uri)
        return False
    try:
        torch.compiler.load_cache_artifacts(blob)
    except Exception as exc:  # a blob torch cannot read (another format): compile as if absent
        log.warning("compile cache %s not loaded: %s", uri, exc)
        return False
    return True


def save(uri: str) -> int:
    """Store what this process compiled at `uri` (blob, then its checksum); returns bytes written."""
    import torch

    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return 0
    blob, _info = saved
    try:
        storage.write_bytes(uri, blob)
        storage.write_bytes(f"{uri}.sha256", hashlib.sha256(blob).hexdigest().encode())
    except Exception as exc:  # any storage fault: the next run compiles again, this one goes on
        log.warning("compile cache %s not written: %s", uri, exc)
        return 0
    return len(blob)


@dataclass
class StepCache:
    """The compiled step's cache for one run: loaded before the trainer compiles, saved once after."""

    uri: str
    loaded: bool
    saved_bytes: int = 0
    finished: bool = False

    @classmethod
    def open(
        cls, setting: str, fxcache_uri: str, shapes: dict, progress: Callable[[str], None]
    ) -> StepCache | None:
        """Load the blob for `shapes` if there is one; None when `setting` is off."""
        folder = cache_folder(setting, fxcache_uri)
        if folder is None:
            return None
        started = time.perf_counter()
        uri = storage.join(folder, f"{cache_key(shapes)}.bin")
        loaded = load(uri)
        seconds = time.perf_counter() - started
        progress(
            f"compile cache: loaded {uri} in {seconds:.2f}s"
            if loaded
            else f"compile cache: none usable at {uri}; this run compiles and saves it after its first fold"
        )
        return cls(uri, loaded)

    def after_fold(self, progress: Callable[[str], None]) -> None:
        """Once, after the first trained fold (compile and capture done): save, unless it was loaded."""
        if self.finished:
            return
        self.finished = True
        if self.loaded:
            return
        started = time.perf_counter()
        self.saved_bytes = save(self.uri)
        if self.saved_bytes:
            progress(
                f"compile cache: saved {self.saved_bytes:,} bytes to {self.uri} "
                f"in {time.perf_counter() - started:.2f}s"
            )


def for_run(
    setting: str, fxcache_uri: str, device, dqn, data, replay_rows: int, progress: Callable[[str], None]
) -> StepCache | None:
    """The run's step cache, loaded before its trainer is built: only on CUDA with compile, unless off."""
    if device.type != "cuda" or not dqn.compile:
        return None
    rows, n_features = data.features.shape
    return StepCache.open(setting, fxcache_uri, step_shapes(dqn, rows, n_features, replay_rows), progress)
