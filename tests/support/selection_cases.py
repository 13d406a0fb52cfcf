"""A hand-computed PBO example: four folds (rows) of three trials (columns)."""

import numpy as np

HAND = np.array([[4, 1, 2], [1, 3, 2], [2, 4, 1], [6, 0, 5]], dtype=float)
