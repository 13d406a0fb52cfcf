"""The `--out` folder: every file and folder name a run, a search and `foxhunt evaluate` write or read.

One place for the names, so the run that writes a file and the code that reads it back (a resume, the
manifest's checks, `foxhunt evaluate`, the Argo step outputs) cannot drift apart. Standard library
only: every stage imports it.

    --out/
      summary.json  manifest.json  run.lock  run.png  timings.png  features.fxcache (pipeline)
      learning.png  positions.png  seeds.png (--seeds K)
      trades.parquet  daily.csv  monthly.csv
      holdout.json  holdout.png  holdout/ (--holdout-days: the final period's fold, as fold_N/)
      evaluation.json (foxhunt evaluate)
      a universe:  book.json  book.png  instruments/<name>/ (its fold_N/, stitched.json, series.npz, run.png ...)
      fold_N/  weights.pt  norm_stats_foldN.json  positions.npy  report.json
      seed_S/fold_N/ (--seeds K: seed S's folds, as fold_N/)
      a search:  study.json  trials.csv  trials.json  best_params.json  study.sqlite3  trials.png
                 trials/NNNN/  trial.json  fold_N/ (as above)
"""

from __future__ import annotations

import re

SUMMARY = "summary.json"
MANIFEST = "manifest.json"
LOCK = "run.lock"
RUN_PICTURE = "run.png"
TIMINGS_PICTURE = "timings.png"
LEARNING_PICTURE = "learning.png"  # each fold's loss and Sharpe by epoch, the epoch kept, the gate
POSITIONS_PICTURE = "positions.png"  # the stitched record's positions and net wealth over its dates
SEEDS_PICTURE = "seeds.png"  # --seeds K: every seed's stitched wealth and their band
BOOK_PICTURE = "book.png"  # a universe run: the book beside its baselines, and each instrument's record
PIPELINE_FXCACHE = "features.fxcache"
EVALUATION = "evaluation.json"  # `foxhunt evaluate`'s rescoring of a saved run
TRADES = "trades.parquet"  # the stitched record's trades
DAILY = "daily.csv"  # daily P&L and returns
MONTHLY = "monthly.csv"  # the monthly table
# The untouched final period (`--holdout-days`): its fold's folder, figures and picture.
HOLDOUT_DIR = "holdout"
HOLDOUT_REPORT = "holdout.json"
HOLDOUT_PICTURE = "holdout.png"

# A fold's folder and files.
FOLD_FOLDER = re.compile(r"fold_(\d+)")
# An extra seed's folds (--seeds K): `seed_S/fold_N/`.
SEED_FOLDER = re.compile(r"seed_(\d+)")
WEIGHTS = "weights.pt"
POSITIONS = "positions.npy"
FOLD_REPORT = "report.json"

# A search's files at the top of --out, and its trials' folders.
STUDY_SUMMARY = "study.json"
TRIALS_CSV = "trials.csv"
TRIALS_JSON = "trials.json"
BEST_PARAMS = "best_params.json"
STUDY_FILE = "study.sqlite3"
TRIALS_DIR = "trials"
TRIAL_FOLDER = re.compile(r"\d+")  # trials/NNNN; other folders under trials/ belong to other runs
TRIAL_REPORT = "trial.json"
TRIALS_PICTURE = "trials.png"  # each trial's objective with its interval, the best marked

# What a run writes at the top of its --out (besides its input, which may live there too).
RUN_FILES = (
    MANIFEST,
    SUMMARY,
    RUN_PICTURE,
    LEARNING_PICTURE,
    POSITIONS_PICTURE,
    SEEDS_PICTURE,
    TRIALS_PICTURE,
    TRIALS_CSV,
    TRIALS_JSON,
    BEST_PARAMS,
    STUDY_SUMMARY,
    STUDY_FILE,
    TRADES,
    DAILY,
    MONTHLY,
    HOLDOUT_REPORT,
    HOLDOUT_PICTURE,
)


def fold_folder(fold: int) -> str:
    """The folder of fold `fold`'s outputs, relative to the run's (or a trial's) folder: `fold_3`."""
    return f"fold_{fold}"


def seed_folder(seed: int) -> str:
    """The folder, under the run's, of an extra seed's folds (--seeds K): `seed_12`."""
    return f"seed_{seed}"


def norm_stats_file(fold: int) -> str:
    """The name of fold `fold`'s norm stats file: `norm_stats_fold3.json`."""
    return f"norm_stats_fold{fold}.json"


def trial_folder(number: int) -> str:
    """The folder of trial `number`'s fold outputs, relative to `--out`: `trials/0007`."""
    return f"{TRIALS_DIR}/{number:04d}"
