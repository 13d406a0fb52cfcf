"""Several MLP fits at once (`mlp_fit.fit_mlps`: every fit's reads and copies first, then the steps) give
each fit's own weights and predictions bit for bit, on the signal arrays."""

import pytest
import torch
from support.signal_arrays import signal_arrays

from foxhunt.evaluate import supervised as sv
from foxhunt.evaluate.mlp_fit import MLPFit, _prepare, fit_mlps

STEPS = 100


@pytest.fixture(scope="module")
def rows():
    arrays = signal_arrays(24_000, seed=0)  # enough bars that a fit learns (moves from step 0)
    return torch.from_numpy(arrays.features), torch.from_numpy(arrays.targets)


def test_fits_made_together_equal_each_fit_made_alone(rows):
    # Catches: one fit's target scale, first weights or minibatch rows given to another.
    x, y = rows
    jobs = [(x[:16_000], y[:16_000, sv.target_column(h)], h) for h in sv.SUPERVISED_HORIZONS]
    jobs.append((x[:90], y[:90, sv.target_column(15)], 15))  # too short for a tail: the step-0 model
    split_jobs = [(f, t, sv.split_for_tail(f.shape[0], h)) for f, t, h in jobs]
    options = {"hidden": 16, "steps": STEPS, "batch": 256, "lr": 1e-2}
    together = fit_mlps(split_jobs, seed=4, graphs=True, **options)
    val = x[16_100:16_600]
    for fit, (f, t, h) in zip(together, jobs, strict=True):
        alone = sv.fit_mlp(f, t, h, seed=4, **options)
        assert (fit.y_mean, fit.y_std) == (alone.y_mean, alone.y_std)
        assert all(
            torch.equal(a, b) for a, b in zip(fit.net.parameters(), alone.net.parameters(), strict=True)
        )
        assert torch.equal(fit.predict(val), alone.predict(val))
    # The first two learnt (a step-0 model predicts one number): their steps, not only their starts, agree.
    assert all(fit.predict(val).unique().numel() > 1 for fit in together[:2])


def test_fits_on_two_devices_at_once_are_refused(rows):
    x, y = rows
    meta = (x[:500].to("meta"), y[:500, 0].to("meta"), None)
    with pytest.raises(ValueError, match="one device at a time"):
        fit_mlps(
            [(x[:500], y[:500, 0], None), meta], seed=0, hidden=8, steps=25, batch=8, lr=1e-3, graphs=True
        )


def test_predictions_standardise_each_feature_clip_it_at_five_and_undo_the_target_scale():
    net = torch.nn.Linear(2, 1)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[1.0, 1.0]]))
        net.bias.zero_()
    fit = MLPFit(net, torch.tensor([1.0, 0.0]), torch.tensor([1.0, 2.0]), 0.5, 2.0)
    got = fit.predict(torch.tensor([[4.0, 4.0], [101.0, -100.0], [1.0, 30.0]]))
    # z = (3, 2) → 5 → 10.5; z = (100, −50) clipped to (5, −5) → 0 → 0.5; z = (0, 15) → 5 → 10.5
    assert got.tolist() == [10.5, 0.5, 10.5]


def test_a_constant_feature_is_left_unscaled_so_the_fit_predicts_numbers_not_nan():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 42, generator=g)
    x[:, 7] = 3.0
    y = torch.randn(200, generator=g)
    got = sv.fit_mlp(x, y, 60).predict(x[:5])  # too short for a tail: the step-0 model, the mean
    torch.testing.assert_close(got, torch.full_like(got, float(y.double().mean())), rtol=0, atol=1e-6)


def test_the_fit_keeps_the_checkpoint_of_least_squared_error_on_the_tail_not_of_least_absolute_error(
    monkeypatch,
):
    from foxhunt.evaluate import mlp_steps

    def one_checkpoint_predicting_0_4(net, *_args, **_kwargs):
        with torch.no_grad():
            net[-1].bias.fill_(0.4)  # the head's weights stay 0: every row predicts 0.4 (standardised)
        yield

    monkeypatch.setattr(mlp_steps, "fit_segments", one_checkpoint_predicting_0_4)
    x = torch.randn(1000, 42, generator=torch.Generator().manual_seed(1))
    y = torch.zeros(1000)
    y[:784] = torch.tensor([1.0, -1.0]).repeat(392)  # the fitted rows: mean 0, standard deviation 1
    y[960:] = 2.0  # the tail (rows 800 on): 160 at 0, 40 at 2; mean 0.4, median 0
    # Squared error: 0.64 at 0.4 against 0.8 at step 0's 0; absolute error: 0.64 against 0.4.
    fit = sv.fit_mlp(x, y, 16)
    torch.testing.assert_close(fit.predict(x[:3]), torch.full((3,), 0.4, dtype=torch.float64))


def test_a_fit_steps_adamw_at_the_given_rate_with_a_weight_decay_of_1e_4_scored_every_25_steps(monkeypatch):
    from foxhunt.evaluate import mlp_steps

    plans = []

    def no_steps(net, batches_z, batches_y, plan, use_graphs=True):
        plans.append(plan)
        return iter(())

    monkeypatch.setattr(mlp_steps, "fit_segments", no_steps)
    g = torch.Generator().manual_seed(2)
    sv.fit_mlp(torch.randn(1000, 42, generator=g), torch.randn(1000, generator=g), 16, steps=50, lr=0.05)
    (plan,) = plans
    assert (plan.lr, plan.weight_decay, plan.every, plan.steps) == (0.05, 1e-4, 25, 50)


def test_minibatches_draw_from_every_fitted_row_and_from_no_purged_or_tail_row():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(200, 42, generator=g), torch.randn(200, generator=g)
    (prepared,) = _prepare([(x, y, (120, 160))], seed=0, hidden=4, steps=300, batch=1024)
    # 300 steps of min(1024, 120) rows: 36,000 draws from rows 0..119 reach both ends.
    assert prepared.rows.shape == (300, 120)
    assert (int(prepared.rows.min()), int(prepared.rows.max())) == (0, 119)


def test_of_two_checkpoints_equally_good_on_the_tail_the_earlier_is_kept(monkeypatch):
    from foxhunt.evaluate import mlp_steps

    def a_checkpoint_reading_only_rising_feature_0(net, *_args, **_kwargs):
        with torch.no_grad():
            for layer in (net[0], net[2], net[4]):
                layer.weight.zero_()
                layer.bias.zero_()
                layer.weight[0, 0] = 1.0  # ReLU(ReLU(z₀)): 0 wherever feature 0 is below its mean
        yield

    monkeypatch.setattr(mlp_steps, "fit_segments", a_checkpoint_reading_only_rising_feature_0)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(1000, 42, generator=g)
    x[800:, 0] = -5.0  # the tail: feature 0 far below the fitted rows' mean, so both predict 0 there
    y = torch.randn(1000, generator=g)
    fit = sv.fit_mlp(x, y, 16)
    row = x[:1].clone()
    row[0, 0] = 10.0  # where the checkpoint predicts above the training mean
    torch.testing.assert_close(fit.predict(row), y[:784].double().mean().reshape(1), rtol=0, atol=1e-6)
