"""foxhunt: walk-forward reinforcement learning on minute bars, one persistent trainer per run."""

__version__ = "0.1.0"
