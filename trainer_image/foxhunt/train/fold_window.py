"""The fold a trainer works on: its index range, norm stats and step count, shared by the lone trainer
and the population (both read the same device data through the same fixed buffers)."""

from __future__ import annotations

import math

import torch


class FoldWindow:
    """Pointing a trainer at a fold. Reads `data`, `capacity`, `config` and fills the fixed buffers
    `train_start`, `n_valid`, `mean` and `std` in place, so a captured step sees the new fold."""

    def set_fold_range(self, fold_range) -> None:
        """Point the trainer at a fold: indices only, nothing is copied."""
        if fold_range.train_end + 1 > self.data.features.shape[0]:
            raise ValueError(f"fold {fold_range.fold}: train_end {fold_range.train_end} past the data")
        if fold_range.train_rows - 1 > self.capacity:
            raise ValueError(
                f"fold {fold_range.fold}: {fold_range.train_rows} rows exceed replay {self.capacity}"
            )
        self.fold_range = fold_range
        self.train_start.fill_(fold_range.train_start)
        self.n_valid.fill_(fold_range.train_rows - 1)  # the last bar has no next state inside the fold

    @torch.no_grad()
    def compute_norm_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std per feature over the fold's training slice, on the device."""
        train = self.data.features[self.fold_range.train_slice]  # a view
        std, mean = torch.std_mean(train, dim=0, correction=0)
        # Constant features (e.g. zero volume) would divide by zero; 1 leaves them centred at 0.
        std = torch.where(std > 1e-8, std, torch.ones_like(std))
        self.mean.copy_(mean)
        self.std.copy_(std)
        return self.mean, self.std

    def norm_stats_dict(self) -> dict:
        """The fold's norm stats as plain lists, for `norm_stats_fold{N}.json`."""
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    def steps_per_epoch(self) -> int:
        """Gradient steps per epoch: the config's, or ceil(train rows / batch size)."""
        if self.config.steps_per_epoch > 0:
            return self.config.steps_per_epoch
        return max(1, math.ceil(self.fold_range.train_rows / self.config.batch_size))
