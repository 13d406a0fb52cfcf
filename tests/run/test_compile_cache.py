"""The compiled step's cache beside the fxcache: keyed by what changes the code, signed before loading.

torch's save and its cache population are replaced by recorders here (a real compile takes minutes on
CI's CPUs); the blobs are torch's real container format. tests_gpu/ runs the real round trip between two
fresh processes on CUDA; test_compile_cache_trust.py holds the forged artifacts.
"""

import contextlib
import hashlib
import hmac
import io
import json
import shutil
from dataclasses import replace

import pytest
import torch
from support.recorded_cache import record_caches
from support.run_cases import ONE_FOLD, TINY_DQN, train_argv
from support.trainer_cases import SMALL, planted_arrays

from foxhunt.cli import main
from foxhunt.cli.commands import run_config
from foxhunt.cli.parser import build_parser
from foxhunt.config import DQNConfig, RunConfig
from foxhunt.errors import ConfigError
from foxhunt.run import compile_cache
from foxhunt.train import SHAPE_FIELDS, to_device

SHAPES = compile_cache.step_shapes(DQNConfig(), rows=1000, n_features=42, replay_rows=800, members=1)


KEY = "a-key-from-a-kubernetes-secret"


def blob_of(content: bytes) -> bytes:
    """torch's own container holding one Inductor artifact with `content`."""
    from torch.compiler._cache import CacheArtifactManager

    CacheArtifactManager._ensure_cache_artifacts_registered()
    with CacheArtifactManager.with_fresh_cache():
        CacheArtifactManager.record_artifact("inductor", "fkernelkey", content)
        return CacheArtifactManager.serialize()[0]


COMPILED = blob_of(b"compiled kernels")


@pytest.fixture
def artifacts(monkeypatch):
    """The signing key set; torch's save and cache population recorded: the contents loaded, and what a
    save would return."""
    record = {"loaded": [], "saved": COMPILED}
    monkeypatch.setenv(compile_cache.KEY_ENV, KEY)

    def populate(found):
        record["loaded"].extend(item.content for items in found.values() for item in items)

    def save():
        return None if record["saved"] is None else (record["saved"], "info")

    monkeypatch.setattr(compile_cache, "_populate", populate)
    monkeypatch.setattr(torch.compiler, "save_cache_artifacts", save)
    return record


def test_the_key_is_stable_for_the_same_step():
    assert compile_cache.cache_key(SHAPES) == compile_cache.cache_key(dict(SHAPES))


@pytest.mark.parametrize("name", SHAPE_FIELDS)
def test_every_setting_that_changes_the_step_changes_the_key(name):
    value = getattr(DQNConfig(), name)
    changed = (not value) if isinstance(value, bool) else value * 2
    other = compile_cache.step_shapes(replace(DQNConfig(), **{name: changed}), 1000, 42, 800, 1)
    assert compile_cache.cache_key(other) != compile_cache.cache_key(SHAPES)


@pytest.mark.parametrize("size", ["rows", "n_features", "replay_rows", "members"])
def test_the_sizes_of_the_buffers_the_step_reads_change_the_key(size):
    assert compile_cache.cache_key({**SHAPES, size: SHAPES[size] + 1}) != compile_cache.cache_key(SHAPES)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [1, 3])
def test_a_run_keeps_the_step_of_as_many_members_as_it_has_seeds_saved_once(
    seeds, tiny_fxcache, tmp_path, monkeypatch
):
    # One seed's blob holds another step than three seeds' (the stacked weights' first dimension): a run of
    # three that loaded it compiled anyway and never saved its own (7f3befe, H100: build 9.1 s against 2.7 s).
    asked = record_caches(monkeypatch)
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"dqn": TINY_DQN}))
    argv = train_argv(tiny_fxcache, tmp_path / "out", params, *ONE_FOLD, "--seeds", str(seeds))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    assert [(c.fxcache_uri, c.members, c.saves) for c in asked] == [(str(tiny_fxcache), seeds, 1)]


def test_a_change_in_the_trainers_source_changes_the_key(tmp_path, monkeypatch):
    source = tmp_path / "trainer"
    shutil.copytree(compile_cache._TRAINER_DIR, source, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(compile_cache, "_TRAINER_DIR", source)
    before = compile_cache.cache_key(SHAPES)
    step = source / "step.py"
    step.write_text(step.read_text() + "\n# changed\n")
    assert compile_cache.cache_key(SHAPES) != before


def test_another_python_version_changes_the_key(monkeypatch):
    before = compile_cache.cache_key(SHAPES)
    monkeypatch.setattr(compile_cache.platform, "python_version", lambda: "3.99.0")
    assert compile_cache.cache_key(SHAPES) != before


def test_auto_keeps_the_cache_beside_the_fxcache_and_off_keeps_none():
    assert (
        compile_cache.cache_folder("auto", "s3://data/fx/EURUSD.arrow")
        == "s3://data/fx/EURUSD.arrow.torch-compile"
    )
    assert compile_cache.cache_folder("off", "s3://data/fx/EURUSD.arrow") is None
    assert compile_cache.cache_folder("s3://image-cache/steps", "fx.arrow") == "s3://image-cache/steps"


def test_an_fxcache_named_with_a_trailing_slash_keeps_its_cache_beside_it_not_inside():
    folder = compile_cache.cache_folder("auto", "s3://data/fx/EURUSD.arrow/")
    assert folder == "s3://data/fx/EURUSD.arrow.torch-compile"


def test_a_saved_blob_is_loaded_by_the_next_process(tmp_path, artifacts):
    uri = str(tmp_path / "fx.arrow.torch-compile" / "key.bin")
    assert compile_cache.save(uri) == len(COMPILED)
    assert (tmp_path / "fx.arrow.torch-compile" / "key.bin.hmac").read_text() == hmac.new(
        KEY.encode(), COMPILED, hashlib.sha256
    ).hexdigest()
    assert compile_cache.load(uri) is True
    assert artifacts["loaded"] == [b"compiled kernels"]


def test_a_blob_that_fails_its_checksum_is_never_loaded(tmp_path, artifacts):
    uri = str(tmp_path / "key.bin")
    compile_cache.save(uri)
    (tmp_path / "key.bin").write_bytes(blob_of(b"compiled kernelz"))  # replaced after it was signed
    assert compile_cache.load(uri) is False
    assert artifacts["loaded"] == []


def test_a_blob_without_its_signature_is_never_loaded(tmp_path, artifacts):
    (tmp_path / "key.bin").write_bytes(COMPILED)
    assert compile_cache.load(str(tmp_path / "key.bin")) is False
    assert artifacts["loaded"] == []


def test_a_blob_torch_cannot_read_costs_a_compile_not_the_run(tmp_path, artifacts, monkeypatch):
    uri = str(tmp_path / "key.bin")
    compile_cache.save(uri)

    def unreadable(found):
        raise RuntimeError("unpickling failed")

    monkeypatch.setattr(compile_cache, "_populate", unreadable)
    assert compile_cache.load(uri) is False


def test_nothing_compiled_writes_nothing(tmp_path, artifacts):
    artifacts["saved"] = None
    assert compile_cache.save(str(tmp_path / "key.bin")) == 0
    assert list(tmp_path.iterdir()) == []


def test_a_build_saves_once_when_nothing_was_loaded(tmp_path, artifacts):
    lines = []
    cache = compile_cache.StepCache.open("auto", str(tmp_path / "fx.arrow"), SHAPES, lines.append)
    assert not cache.loaded and "none usable" in lines[-1]
    cache.after_build(lines.append)
    artifacts["saved"] = blob_of(b"later kernels")
    cache.after_build(lines.append)
    assert (tmp_path / "fx.arrow.torch-compile" / f"{compile_cache.cache_key(SHAPES)}.bin").read_bytes() == (
        COMPILED
    )
    again = compile_cache.StepCache.open("auto", str(tmp_path / "fx.arrow"), SHAPES, lines.append)
    assert again.loaded and artifacts["loaded"] == [b"compiled kernels"]


def test_a_run_that_loaded_the_cache_does_not_write_it_again(tmp_path, artifacts):
    folder = str(tmp_path / "steps")
    compile_cache.StepCache.open(folder, "fx.arrow", SHAPES, print).after_build(print)
    blob = tmp_path / "steps" / f"{compile_cache.cache_key(SHAPES)}.bin"
    written = blob.stat().st_ino  # an atomic rewrite would put a new file in its place
    cache = compile_cache.StepCache.open(folder, "fx.arrow", SHAPES, print)
    cache.after_build(print)
    assert cache.loaded and cache.saved_bytes == 0 and blob.stat().st_ino == written


@pytest.mark.parametrize(
    ("setting", "dqn"), [("auto", DQNConfig()), ("off", DQNConfig()), ("auto", replace(SMALL, compile=False))]
)
def test_no_cache_on_cpu_or_without_compile(setting, dqn, tmp_path):
    data = to_device(*planted_arrays(200), torch.device("cpu"))
    assert compile_cache.for_run(setting, str(tmp_path / "fx"), dqn, data, 100, 1, print) is None


def test_the_compile_cache_flag_sets_the_run_setting():
    args = build_parser().parse_args(["train", "--fxcache", "f", "--out", "o", "--compile-cache", "off"])
    assert run_config(args).compile_cache == "off"
    assert RunConfig().compile_cache == "auto"
    with pytest.raises(ConfigError, match="compile_cache"):
        RunConfig(compile_cache=" ")


def test_a_key_set_too_short_is_refused_before_work_with_a_line_that_says_so(monkeypatch):
    monkeypatch.setenv(compile_cache.KEY_ENV, "x" * (compile_cache.MIN_KEY_BYTES - 1))
    with pytest.raises(ConfigError, match=r"is set but is 15 bytes; a signing key needs at least 16"):
        compile_cache.check_setting(compile_cache.AUTO)


def test_a_key_of_the_minimum_length_is_accepted(monkeypatch):
    monkeypatch.setenv(compile_cache.KEY_ENV, "x" * compile_cache.MIN_KEY_BYTES)
    compile_cache.check_setting(compile_cache.AUTO)
    assert compile_cache.signing_key() == b"x" * compile_cache.MIN_KEY_BYTES


def test_a_short_key_is_no_error_when_the_cache_is_off(monkeypatch):
    monkeypatch.setenv(compile_cache.KEY_ENV, "short")
    compile_cache.check_setting(compile_cache.OFF)


def test_an_unset_key_leaves_auto_off_without_an_error(monkeypatch):
    monkeypatch.delenv(compile_cache.KEY_ENV, raising=False)
    compile_cache.check_setting(compile_cache.AUTO)
    assert compile_cache.key_state() == "unset"
