"""Compiled-step artifacts kept in object storage beside the fxcache, so a fresh pod skips Inductor.

A pod that starts on a new node has no local Inductor cache: tracing, compiling and autotuning
the training step costs seconds every run. PyTorch can serialise what it compiled
(`torch.compiler.save_cache_artifacts`) and load it into a fresh process before compiling,
which turns the compile into cache hits. The blob is keyed by everything that changes the
generated code: torch and CUDA versions, the GPU, the Python version, the step's shapes and the
trainer's own source. It is stored beside the fxcache (`<fxcache>.torch-compile/<key>.bin`, or
under the folder `--compile-cache` names).

Trust: compiled artifacts are code (Inductor unpickles them and runs the kernels they carry), and
whoever can write the data bucket is not trusted to run code in the trainer. So a blob is loaded
only when its HMAC-SHA256 tag (`<key>.bin.hmac`) verifies under a key the bucket's writers do not
hold: `FOXHUNT_COMPILE_CACHE_KEY`, set from a Kubernetes Secret. The tag is checked before any byte
of the blob is parsed; after it, every artifact's cache key (torch turns keys into file paths under
its cache folder) must be a relative path without `..`, or nothing is loaded. Without the key
`auto` keeps no cache (each pod compiles), and a folder named with `--compile-cache` is refused
before work. A cache that cannot be read or written costs a compile, never the run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from foxhunt import storage
from foxhunt.errors import ConfigError

log = logging.getLogger(__name__)

_TRAINER_DIR = Path(__file__).resolve().parents[1] / "train"  # the train stage: the step's code
AUTO, OFF = "auto", "off"
KEY_ENV = "FOXHUNT_COMPILE_CACHE_KEY"
TAG_SUFFIX = ".hmac"
MIN_KEY_BYTES = 16
# The artifact kinds torch 2.x writes; anything else in a blob is refused, not passed on.
ARTIFACT_TYPES = frozenset({"inductor", "autotune", "aot_autograd", "pgo", "precompile"})
# torch joins a key onto its cache folder: printable, no backslash, no leading "/" and no empty,
# "." or ".." component keeps the path inside it.
_SAFE_KEY = re.compile(r"[\x20-\x5b\x5d-\x7e]+")


def signing_key() -> bytes | None:
    """The key that signs compiled artifacts (from a Secret), or None when unset or too short to trust."""
    value = os.environ.get(KEY_ENV, "")
    return value.encode() if len(value.encode()) >= MIN_KEY_BYTES else None


def signature(key: bytes, blob: bytes) -> str:
    """The blob's HMAC-SHA256 tag under `key`, hex."""
    return hmac.new(key, blob, hashlib.sha256).hexdigest()


def key_state() -> str:
    """How the signing key reads: 'set', 'unset', or 'short' (set, but too short to trust)."""
    value = os.environ.get(KEY_ENV, "")
    if not value:
        return "unset"
    return "set" if len(value.encode()) >= MIN_KEY_BYTES else "short"


def check_setting(setting: str) -> None:
    """Before work: a key set too short to trust is an error (a user meant the cache on); a folder named
    with `--compile-cache` needs the key (ConfigError, exit 2)."""
    if setting != OFF and key_state() == "short":
        length = len(os.environ.get(KEY_ENV, "").encode())
        raise ConfigError(
            "run config",
            "compile_cache",
            f"{KEY_ENV} is set but is {length} bytes; a signing key needs at least {MIN_KEY_BYTES} "
            "(e.g. `openssl rand -hex 32`), or unset it to run without a compile cache",
        )
    if setting not in (AUTO, OFF) and signing_key() is None:
        raise ConfigError(
            "run config",
            "compile_cache",
            f"names a folder but {KEY_ENV} is not set (at least {MIN_KEY_BYTES} bytes, from a Secret): "
            "compiled artifacts are code and are loaded only when signed; use auto or off",
        )


def unsafe_artifact_key(key: str) -> bool:
    """True when torch would turn `key` into a path outside its cache folder (absolute, `..`, odd bytes)."""
    return not _SAFE_KEY.fullmatch(key) or any(part in ("", ".", "..") for part in key.split("/"))


def _source_digest() -> str:
    """sha256 over the train stage's source: a code change must not reuse old kernels."""
    digest = hashlib.sha256()
    for path in sorted(_TRAINER_DIR.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def step_shapes(dqn, rows: int, n_features: int, replay_rows: int, members: int) -> dict:
    """The step's shapes: its settings, the sizes of the device buffers it reads and its members (the
    stacked weights' first dimension: `--seeds 3` compiles another step than one seed), static in the graph."""
    from foxhunt.train.settings import SHAPE_FIELDS

    return {
        **{name: getattr(dqn, name) for name in SHAPE_FIELDS},
        "rows": int(rows),
        "n_features": int(n_features),
        "replay_rows": int(replay_rows),
        "members": int(members),
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


def checked_artifacts(blob: bytes):
    """The blob's artifacts, parsed without unpickling anything; None unless every kind is known and
    every key stays inside torch's cache folder. Call only on a blob whose tag verified."""
    from torch.compiler._cache import CacheArtifactManager  # the binary container, no pickle at this level

    artifacts = CacheArtifactManager.deserialize(blob)
    if not artifacts:
        return None
    for kind, items in artifacts.items():
        unsafe = [item.key for item in items if unsafe_artifact_key(item.key)]
        if kind not in ARTIFACT_TYPES or unsafe:
            log.warning(
                "compile cache refused: %s artifact %r is not one this image writes", kind, unsafe[:1]
            )
            return None
    return artifacts


def _populate(artifacts) -> None:
    from torch.compiler._cache import CacheArtifactManager

    CacheArtifactManager.populate_caches(artifacts)


def load(uri: str) -> bool:
    """Load compiled artifacts from `uri` into this process; False when absent, unsigned or not trusted."""
    key = signing_key()
    if key is None:
        return False
    tag_uri = f"{uri}{TAG_SUFFIX}"
    try:
        if not (storage.exists(uri) and storage.exists(tag_uri)):
            return False
        blob = storage.read_bytes(uri)
        tag = storage.read_bytes(tag_uri).decode("ascii", errors="replace").strip()
    except Exception as exc:  # any storage fault: a cache we cannot read only costs a compile
        log.warning("compile cache %s not read: %s", uri, exc)
        return False
    if not hmac.compare_digest(signature(key, blob), tag):
        log.warning("compile cache %s ignored: its signature does not verify under %s", uri, KEY_ENV)
        return False
    try:
        artifacts = checked_artifacts(blob)
        if artifacts is None:
            return False
        _populate(artifacts)
    except Exception as exc:  # a blob torch cannot read (another format): compile as if absent
        log.warning("compile cache %s not loaded: %s", uri, exc)
        return False
    return True


def save(uri: str) -> int:
    """Store what this process compiled at `uri` (blob, then its tag); returns bytes written, 0 unsigned."""
    import torch

    key = signing_key()
    if key is None:
        return 0
    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return 0
    blob, _info = saved
    try:
        storage.write_bytes(uri, blob)
        storage.write_bytes(f"{uri}{TAG_SUFFIX}", signature(key, blob).encode())
    except Exception as exc:  # any storage fault: the next run compiles again, this one goes on
        log.warning("compile cache %s not written: %s", uri, exc)
        return 0
    return len(blob)


@dataclass
class StepCache:
    """The compiled step's cache for one trainer: loaded before its build compiles, saved once after."""

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
        if signing_key() is None:
            state = "too short" if key_state() == "short" else "not set"
            progress(f"compile cache: off ({KEY_ENV} {state}; compiled artifacts load only when signed)")
            return None
        started = time.perf_counter()
        uri = storage.join(folder, f"{cache_key(shapes)}.bin")
        loaded = load(uri)
        seconds = time.perf_counter() - started
        progress(
            f"compile cache: loaded {uri} in {seconds:.2f}s"
            if loaded
            else f"compile cache: none usable at {uri}; this run compiles the step and saves it"
        )
        return cls(uri, loaded)

    def after_build(self, progress: Callable[[str], None]) -> None:
        """Once, after the trainer's build (which compiles and captures the step): save, unless loaded."""
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
    setting: str,
    fxcache_uri: str,
    dqn,
    data,
    replay_rows: int,
    members: int,
    progress: Callable[[str], None],
) -> StepCache | None:
    """The step cache of a trainer of `members` members on `data`, loaded before the trainer is built: only
    where the data is on CUDA and the step compiles, unless off."""
    if data.features.device.type != "cuda" or not dqn.compile:
        return None
    rows, n_features = data.features.shape
    shapes = step_shapes(dqn, rows, n_features, replay_rows, members)
    return StepCache.open(setting, fxcache_uri, shapes, progress)


Built = TypeVar("Built")


def build_with_cache(
    build: Callable[[], Built], cache: StepCache | None, progress: Callable[[str], None]
) -> Built:
    """`build()`, a trainer whose build compiles and captures its step (every run's, search's and
    universe's), with its step's `cache` (`for_run`, opened before the build): saved after it where none was
    usable (nothing compiles later)."""
    built = build()
    if cache is not None:
        cache.after_build(progress)
    return built
