"""One fresh process's view of the compile cache: build a compiled CUDA trainer with the cache in FOLDER,
save it after the build, and print what was loaded and what Inductor hit or compiled, as JSON.
MEMBERS (default 1) is the trainer's member count, as `--seeds` or a search's `--population` gives it.

    python tests_gpu/compile_cache_probe.py FOLDER [MEMBERS]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import torch  # noqa: E402
from support.trainer_cases import SMALL, planted_arrays  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from foxhunt.run import compile_cache  # noqa: E402
from foxhunt.train import DQNTrainer, to_device  # noqa: E402


def main(folder: str, members: int) -> None:
    data = to_device(*planted_arrays(), torch.device("cuda"))
    lines: list[str] = []
    cache = compile_cache.for_run(folder, "unused", SMALL, data, 8000, members, lines.append)
    trainer = DQNTrainer(data, SMALL if members == 1 else [SMALL] * members, max_train_rows=8000)
    cache.after_build(lines.append)
    print(
        json.dumps(
            {
                "loaded": cache.loaded,
                "saved_bytes": cache.saved_bytes,
                "compiles": trainer.compiles,
                "inductor": dict(counters["inductor"]),
                "lines": lines,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
