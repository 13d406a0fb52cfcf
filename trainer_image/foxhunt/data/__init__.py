"""The data stage: bars in (`bars`, `sample`), features and targets computed once (`features`), the
fxcache that carries them to the trainer (`fxcache`), the walk-forward fold ranges (`folds`), and the
P&L of positions held on the bars under the execution model (`pnl`: the evaluation and the trainer's
tail selection share it)."""
