"""Compiled artifacts are code: a blob from the data bucket runs nothing and writes nothing unless it
carries a tag made with the key from the Secret, and even then never writes outside torch's cache.

The forged blobs are torch's real container; torch's own loader is shown to act on each one, so a test
here fails if foxhunt ever hands such a blob to torch.
"""

import hashlib
import pickle
from pathlib import Path

import pytest
import torch
from torch._inductor.triton_bundler import TritonBundler
from torch.compiler._cache import CacheArtifactManager

from foxhunt.config import RunConfig
from foxhunt.errors import ConfigError
from foxhunt.run import compile_cache
from foxhunt.run.pipeline import train

KEY = "a-key-from-a-kubernetes-secret"


class TouchesAFile:
    """A pickle that, when loaded, creates the file `path` (stands for any code the blob could run)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def forged(kind: str, key: str, content) -> bytes:
    """torch's container with one artifact of `kind` under `key`."""
    CacheArtifactManager._ensure_cache_artifacts_registered()
    with CacheArtifactManager.with_fresh_cache():
        CacheArtifactManager.record_artifact(kind, key, content)
        return CacheArtifactManager.serialize()[0]


@pytest.fixture(autouse=True)
def own_inductor_cache(tmp_path, monkeypatch):
    """torch writes what it populates under a folder of this test, with the Secret's key set."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv(compile_cache.KEY_ENV, KEY)
    monkeypatch.setattr(TritonBundler, "is_enabled", staticmethod(lambda: True))  # as on CUDA


def stored(tmp_path: Path, blob: bytes, tag_key: str | None) -> str:
    """The blob beside an fxcache, with a sha256 sidecar and a tag under `tag_key` (None: no tag)."""
    uri = tmp_path / "fx.arrow.torch-compile" / "k.bin"
    uri.parent.mkdir(parents=True)
    uri.write_bytes(blob)
    Path(f"{uri}.sha256").write_text(hashlib.sha256(blob).hexdigest())
    if tag_key is not None:
        Path(f"{uri}.hmac").write_text(compile_cache.signature(tag_key.encode(), blob))
    return str(uri)


def test_torch_itself_would_write_the_forged_absolute_path(tmp_path):
    target = tmp_path / "written-by-the-blob"
    torch.compiler.load_cache_artifacts(forged("autotune", str(target), {"x": 1}))
    assert target.exists()


def test_torch_itself_would_run_the_forged_pickle(tmp_path):
    target = tmp_path / "ran"
    with pytest.raises(AttributeError):  # after the pickle ran: the payload is no compiled graph
        torch.compiler.load_cache_artifacts(forged("inductor", "fabc", pickle.dumps(TouchesAFile(target))))
    assert target.exists()


@pytest.mark.parametrize("tag_key", [None, "the-attackers-own-key-0123"], ids=["sha256-only", "other-key"])
def test_a_blob_that_would_write_a_file_is_not_loaded_without_the_secrets_tag(tmp_path, tag_key):
    target = tmp_path / "written-by-the-blob"
    uri = stored(tmp_path, forged("autotune", str(target), {"x": 1}), tag_key)
    assert compile_cache.load(uri) is False
    assert not target.exists()


@pytest.mark.parametrize("tag_key", [None, "the-attackers-own-key-0123"], ids=["sha256-only", "other-key"])
def test_a_blob_that_would_run_code_is_not_loaded_without_the_secrets_tag(tmp_path, tag_key):
    target = tmp_path / "ran"
    uri = stored(tmp_path, forged("inductor", "fabc", pickle.dumps(TouchesAFile(target))), tag_key)
    assert compile_cache.load(uri) is False
    assert not target.exists()


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_a_signed_blob_with_a_path_outside_the_cache_writes_nothing(tmp_path, where):
    target = tmp_path / "written-by-the-blob"
    key = str(target) if where == "absolute" else "../written-by-the-blob"
    uri = stored(tmp_path, forged("autotune", key, {"x": 1}), KEY)
    assert compile_cache.load(uri) is False
    assert not target.exists() and not (tmp_path / "inductor").exists()


def test_without_the_key_nothing_is_loaded_even_with_a_tag(tmp_path, monkeypatch):
    target = tmp_path / "ran"
    uri = stored(tmp_path, forged("inductor", "fabc", pickle.dumps(TouchesAFile(target))), KEY)
    monkeypatch.delenv(compile_cache.KEY_ENV)
    assert compile_cache.load(uri) is False
    assert not target.exists()


def test_a_signed_blob_in_torchs_format_is_loaded(tmp_path):
    uri = stored(tmp_path, forged("autotune", "ab/cdef.best_config", {"x": 1}), KEY)
    assert compile_cache.load(uri) is True
    assert (tmp_path / "inductor" / "ab" / "cdef.best_config").exists()


@pytest.mark.parametrize(
    "key", ["/etc/x", "../x", "a/../../x", "a//b", "a\\..\\x", "a\x00b", "", "./x", "a\nb", "x/"]
)
def test_keys_that_leave_the_cache_folder_are_unsafe(key):
    assert compile_cache.unsafe_artifact_key(key)


@pytest.mark.parametrize("key", ["fabc123", "ab/cdef.best_config", "mast:job name:3", "a.b/c..d"])
def test_keys_torch_writes_are_safe(key):
    assert not compile_cache.unsafe_artifact_key(key)


def test_auto_without_the_key_keeps_no_cache_and_says_why(tmp_path, monkeypatch):
    monkeypatch.delenv(compile_cache.KEY_ENV)
    lines = []
    assert compile_cache.StepCache.open("auto", str(tmp_path / "fx"), {}, lines.append) is None
    assert compile_cache.KEY_ENV in lines[-1] and not list(tmp_path.iterdir())


@pytest.mark.parametrize("short", ["", "sixteen-bytes-1"])
def test_a_named_folder_without_a_usable_key_is_refused_before_work(
    tmp_path, monkeypatch, short, tiny_fxcache
):
    monkeypatch.setenv(compile_cache.KEY_ENV, short)
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=compile_cache.KEY_ENV):
        train(str(tiny_fxcache), str(out), RunConfig(compile_cache=str(tmp_path / "c")))
    assert not out.exists()
