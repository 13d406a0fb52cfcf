"""A window's records built at once (`records.window_records`, one copy of whatever a device holds) are the
records `fold_record` builds one policy at a time, on real EURUSD bars, whether CPU tensors are read where
they lie or stacked as a GPU's are; and a record's P&L from its previous positions computed once is the P&L
computed from scratch."""

import dataclasses

import numpy as np
import pytest
import torch
from support.eurusd_windows import COST, START, VAL, eurusd_arrays, policies

from foxhunt.data.pnl import net_pnl
from foxhunt.evaluate import records
from foxhunt.evaluate.records import (
    fold_record,
    host_array,
    host_arrays,
    stitch,
    stitch_policies,
    window_records,
)


@pytest.fixture(scope="module")
def eurusd():
    return eurusd_arrays()


def assert_same_record(got, want):
    for field in dataclasses.fields(want):
        g, w = getattr(got, field.name), getattr(want, field.name)
        assert np.array_equal(g, w) and np.asarray(g).dtype == np.asarray(w).dtype, field.name


@pytest.fixture(params=[False, True], ids=["cpu", "gpu-path"])
def stacked(request, monkeypatch):
    """Both paths of `host_arrays`: CPU tensors read where they lie, or stacked and copied as a GPU's are."""
    monkeypatch.setattr(records, "STACK_ON_CPU", request.param)


@pytest.mark.usefixtures("stacked")
def test_the_records_of_a_window_built_at_once_are_each_policys_own_record(eurusd):
    # Catches: rows of the one copy handed to the wrong policy, or the wrong bars of returns.
    timestamp, features, targets = eurusd
    named = {
        name: torch.from_numpy(p.astype(np.float32)) if i % 2 else p
        for i, (name, p) in enumerate(policies(features, START, VAL).items())
    }  # tensors (what the device holds) and arrays, as a run mixes them
    returns = torch.from_numpy(targets[:, 0])
    got = window_records(3, START, named, timestamp, returns)
    assert list(got) == list(named)
    for name, positions in named.items():
        assert_same_record(got[name], fold_record(3, START, positions, timestamp, returns))


def test_the_policies_stitched_together_are_each_policy_stitched_alone(eurusd):
    # Catches: one policy's positions under another's name, the shared sort reused for windows that differ,
    # or a bar owned by the wrong one of two overlapping windows.
    timestamp, features, targets = eurusd
    by_policy: dict[str, list] = {}
    for fold, start in enumerate((START, START + VAL // 2, START + VAL + 500)):  # an overlap, then a gap
        for name, record in window_records(
            fold, start, policies(features, start, VAL), timestamp, targets[:, 0]
        ).items():
            by_policy.setdefault(name, []).append(record)
    own = [  # the same positions on windows 7 bars later, on arrays of their own: stitched alone
        fold_record(f, int(r.index[0]) + 7, r.positions, timestamp, targets[:, 0])
        for f, r in enumerate(by_policy["slow_sign"])
    ]
    by_policy["own arrays"] = own
    got = stitch_policies(by_policy)
    assert list(got) == list(by_policy)
    for name, recs in by_policy.items():
        assert_same_record(got[name], stitch(recs))
    assert len({id(r.positions) for r in got.values()}) == len(got)


@pytest.mark.usefixtures("stacked")
def test_positions_of_several_lengths_each_take_their_own_bars(eurusd):
    timestamp, features, targets = eurusd
    named = {"short": torch.ones(100), "long": torch.from_numpy(-np.ones(250))}
    got = window_records(0, START, named, timestamp, targets[:, 0])
    for name, positions in named.items():
        assert_same_record(got[name], fold_record(0, START, positions, timestamp, targets[:, 0]))


@pytest.mark.usefixtures("stacked")
def test_tensors_of_any_shape_and_dtype_come_back_as_host_array_gives_each():
    # Catches: tensors of another shape or dtype stacked with the rest, or values put back in the wrong place.
    big = torch.tensor([2**40 + 1, 3, 5, 7, 9])  # int64 that float32 would round: never stacked with them
    values = [torch.arange(5.0), np.arange(3.0), big, torch.arange(5, dtype=torch.int8) - 2, torch.arange(5.0) * 2,
              torch.ones(2, 3, dtype=torch.float64), torch.arange(4.0)]  # fmt: skip
    got = host_arrays(values)
    for g, value in zip(got, values, strict=True):
        want = host_array(value)
        assert np.array_equal(g, want) and g.dtype == want.dtype == np.float64


def test_a_records_previous_positions_and_changes_are_kept_read_only_and_its_pnl_is_the_formulas(eurusd):
    # A stitched record with a handover and a gap, where the previous position is not the bar before's.
    timestamp, features, targets = eurusd
    parts = [(0, START, 300), (1, START + 200, 300), (2, START + 800, 100)]
    record = stitch(
        [fold_record(f, s, np.sign(features[s : s + n, 0]), timestamp, targets[:, 0]) for f, s, n in parts]
    )
    previous = record.previous_positions
    assert previous is record.previous_positions and record.position_changes is record.position_changes
    for kept in (previous, record.position_changes):
        with pytest.raises(ValueError):
            kept[0] = 1.0
    fresh = previous.copy()
    assert np.array_equal(record.position_changes, np.abs(record.positions - fresh))
    assert np.array_equal(record.pnl(COST), net_pnl(record.positions, fresh, record.returns, COST))
    assert np.array_equal(record.gross_pnl(), record.positions * record.returns)


def test_a_segment_after_a_gap_is_entered_from_flat():
    # Fold 0 holds rows 0-1 long, fold 1 rows 5-6 long: row 5 does not follow row 1, so it enters from flat
    # and pays the entry again. Each bar earns .002; a unit of change costs .001.
    timestamp, returns = np.arange(10, dtype=np.int64) * 60_000_000_000, np.full(10, 0.002)
    record = stitch(
        [fold_record(0, 0, np.ones(2), timestamp, returns), fold_record(1, 5, np.ones(2), timestamp, returns)]
    )
    assert record.previous_positions.tolist() == [0.0, 1.0, 0.0, 1.0]
    np.testing.assert_allclose(record.pnl(0.001), [0.001, 0.002, 0.001, 0.002])


def test_an_overlapped_bar_goes_to_the_window_started_latest_even_when_an_earlier_one_ends_later():
    # Fold 0 long on rows 0-9, fold 1 short on rows 2-5 (inside it): rows 2-5 are fold 1's, the rest fold 0's.
    timestamp, returns = np.arange(10, dtype=np.int64) * 60_000_000_000, np.zeros(10)
    record = stitch(
        [
            fold_record(0, 0, np.ones(10), timestamp, returns),
            fold_record(1, 2, -np.ones(4), timestamp, returns),
        ]
    )
    assert record.fold.tolist() == [0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    assert record.positions.tolist() == [1, 1, -1, -1, -1, -1, 1, 1, 1, 1]


def test_positions_read_back_from_their_file_are_the_floats_written():
    got = records.positions_from_bytes(records.positions_bytes(torch.tensor([1.0, 0.0, -1.0])))
    assert got.dtype == np.float64 and got.tolist() == [1.0, 0.0, -1.0]
