"""The shape-free DQN settings as device values: 0-d tensors that the captured step reads.

A CUDA graph bakes Python numbers into its kernels and torch.compile guards on them, so a setting
read as a Python float would need a new capture (and a recompile) to change. Read from a device
buffer that is refilled in place, it changes between trials for free: one trainer, one capture
and one compile serve every trial whose settings keep the step's shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from foxhunt.config import DQNConfig

# Settings that change tensor shapes or the step's code: a new trainer (new capture, new compile).
SHAPE_FIELDS = (
    "batch_size",
    "hidden",
    "steps_per_graph",
    "compile",
    "bf16",
    "paired_next_state",
    "fused_activation",
)


@dataclass
class StepSettings:
    """The shape-free settings the training step and collection read, as 0-d device tensors.

    Refilled in place by `DQNTrainer.apply_settings`: a captured graph and compiled kernels read
    the new values without a new capture or compile. The epsilon schedule, steps per epoch and
    the |Q| guard are host-side and read from the config at each epoch.
    """

    lr: torch.Tensor
    gamma: torch.Tensor
    tau: torch.Tensor
    huber_delta: torch.Tensor
    grad_clip: torch.Tensor
    weight_decay: torch.Tensor
    reward_scale: torch.Tensor
    cost: torch.Tensor  # the training reward's cost; evaluation costs are the trainer's eval settings
    n_step: torch.Tensor  # bars the TD target holds the action (an integer, held as a float)

    @classmethod
    def on(cls, device: torch.device, config: DQNConfig) -> StepSettings:
        """Settings for `config` in fresh device buffers."""
        return cls(
            **{f.name: torch.tensor(float(getattr(config, f.name)), device=device) for f in fields(cls)}
        )

    @classmethod
    def stacked(cls, device: torch.device, configs: list[DQNConfig]) -> StepSettings:
        """A population's settings: one (members,) buffer per setting, member i from `configs[i]`."""
        return cls(
            **{
                f.name: torch.tensor([float(getattr(c, f.name)) for c in configs], device=device)
                for f in fields(cls)
            }
        )

    @torch.no_grad()
    def fill_(self, config: DQNConfig | list[DQNConfig]) -> None:
        """Refill every buffer from `config` (a population's: one config per member), in place (no new
        tensor, so graph pointers stay valid)."""
        for f in fields(self):
            buffer = getattr(self, f.name)
            if isinstance(config, list):
                values = torch.tensor([float(getattr(c, f.name)) for c in config])
                buffer.copy_(values.to(buffer.dtype))
            else:
                buffer.fill_(float(getattr(config, f.name)))


def check_shape_free(old: DQNConfig, new: DQNConfig) -> None:
    """ValueError naming the first setting in SHAPE_FIELDS that differs: that change needs a new trainer."""
    for name in SHAPE_FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            raise ValueError(
                f"{name}: {before!r} → {after!r} changes the training step's shapes or code; "
                "build a new trainer for it"
            )


# Settings every member of a population shares: the step's shapes and code, and its step count.
POPULATION_SHARED = (*SHAPE_FIELDS, "steps_per_epoch", "select_tail_share")  # one learning range


def check_population(configs: Sequence[DQNConfig]) -> None:
    """ValueError naming the first setting that members of one population do not share."""
    if not configs:
        raise ValueError("a population needs at least one member")
    first = configs[0]
    for i, config in enumerate(configs[1:], start=1):
        for name in POPULATION_SHARED:
            if getattr(config, name) != getattr(first, name):
                raise ValueError(
                    f"member {i}: {name} {getattr(config, name)!r} differs from member 0's "
                    f"{getattr(first, name)!r}; a population shares {', '.join(POPULATION_SHARED)}"
                )


def padded(configs: Sequence[DQNConfig], size: int) -> list[DQNConfig]:
    """`configs` padded to `size` members with copies of the last one (a partial population's idle members)."""
    if not configs:
        raise ValueError("no settings to train")
    return [*configs, *[replace(configs[-1]) for _ in range(size - len(configs))]]
