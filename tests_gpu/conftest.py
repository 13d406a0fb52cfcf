# The CUDA twins reuse the CPU tests' inputs (tests/trainer_cases.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
