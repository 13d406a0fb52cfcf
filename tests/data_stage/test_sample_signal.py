"""`foxhunt pipeline --sample-signal off`: the generated bars with nothing predictable, reached from the CLI."""

from foxhunt.cli.parser import build_parser
from foxhunt.data.fxcache import read_fxcache
from foxhunt.run.precompute import precompute


def test_the_pipeline_plants_the_signal_by_default_and_takes_off():
    parser = build_parser()
    assert parser.parse_args(["pipeline"]).sample_signal == "on"
    assert parser.parse_args(["pipeline", "--sample-signal", "off"]).sample_signal == "off"


def test_precompute_of_a_sample_without_the_signal_names_it_in_the_source_and_hash(tmp_path):
    on, off = tmp_path / "on.fxcache", tmp_path / "off.fxcache"
    precompute(None, str(on), sample_bars=3000, seed=2, progress=lambda _: None)
    precompute(None, str(off), sample_bars=3000, seed=2, sample_signal=False, progress=lambda _: None)
    meta_on, meta_off = read_fxcache(str(on)).metadata, read_fxcache(str(off)).metadata
    assert meta_on["source_uri"] == "sample://n=3000,seed=2"
    assert meta_off["source_uri"] == "sample://n=3000,seed=2,signal=off"
    assert meta_on["source_hash"] != meta_off["source_hash"]
