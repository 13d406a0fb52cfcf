"""Compiled-step artifacts kept in object storage beside the fxcache, so a fresh pod skips Inductor.

A pod that starts on a new node has no local Inductor cache: tracing, compiling and autotuning
the training step costs seconds every run. PyTorch can serialise what it compiled
(`torch.compiler.save_cache_artifacts`) and load it into a fresh process before compiling
(`torch.compiler.load_cache_artifacts`), which turns the compile into cache hits. The blob is
keyed by everything that changes the generated code: torch and CUDA versions, the GPU, the
Python version, the step's shapes and the trainer's own source. It is stored beside the
fxcache (`<fxcache>.torch-compile/<key>.bin`) with its sha256 in the object name's sidecar, and
a blob that fails its checksum is ignored, never loaded.

Trust: loading artifacts runs code they contain, like loading the image does; anyone who can
write the data bucket can already replace the fxcache. Pass `--compile-cache off` where the
bucket is less trusted than the image.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
from pathlib import Path

from foxhunt import storage

log = logging.getLogger(__name__)

_TRAINER_DIR = Path(__file__).resolve().parent / "trainer"


def _source_digest() -> str:
    """sha256 over the trainer package's source: a code change must not reuse old kernels."""
    digest = hashlib.sha256()
    for path in sorted(_TRAINER_DIR.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


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


def artifact_uri(fxcache_uri: str, key: str) -> str:
    """Where the compiled step for `key` lives, beside the fxcache."""
    return storage.join(f"{str(fxcache_uri).rstrip('/')}.torch-compile", f"{key}.bin")


def load(uri: str) -> bool:
    """Load compiled artifacts from `uri` into this process; False when absent or not trusted."""
    import torch

    checksum_uri = f"{uri}.sha256"
    try:
        if not (storage.exists(uri) and storage.exists(checksum_uri)):
            return False
        blob = storage.read_bytes(uri)
        expected = storage.read_bytes(checksum_uri).decode().strip()
    except OSError as exc:  # a cache we cannot read only costs a compile
        log.warning("compile cache %s not read: %s", uri, exc)
        return False
    if hashlib.sha256(blob).hexdigest() != expected:
        log.warning("compile cache %s ignored: checksum mismatch", uri)
        return False
    torch.compiler.load_cache_artifacts(blob)
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
    except OSError as exc:
        log.warning("compile cache %s not written: %s", uri, exc)
        return 0
    return len(blob)
