"""The data stage: bars in (`bars`, `sample`), features and targets computed once (`features`), the
fxcache that carries them to the trainer (`fxcache`), and the walk-forward fold ranges (`folds`)."""
