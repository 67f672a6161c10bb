# SPDX-License-Identifier: Apache-2.0
"""What a suite run measures: its settings, the `--quick` preset, the plan.

The plan is every (model, mode, replicas) combination that means something;
the rest are listed as skipped with the reason (`single` runs on one device,
`multi_gpu_model` needs 2 replicas, device parallelism needs branches, the
global batch must split evenly).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from benchmarks.suite import datasets, models, modes
from benchmarks.suite.results import RunSpec


@dataclasses.dataclass(frozen=True)
class SuiteConfig:
    """Settings of one suite run (what the `python -m benchmarks` flags set).

    Attributes:
        models: Model names (keys of `models.MODELS`).
        modes: Mode names (`modes.MODES`).
        replicas: Replica counts (devices, or workers for `multi_worker`).
        global_batch_size: Rows per step across all replicas; the same for
            every mode and replica count, so N replicas get 1/N each.
        steps: Timed steps per round; a round's figure is their median.
        rounds: Alternating rounds (every configuration of a model once
            per round, the order rotating), the repetitions each ratio's
            median and 95% interval come from.
        warmup_steps: Untimed steps first (tracing, allocation).
        dataset: `"synthetic"` or `"tfds:NAME"`.
        data_dir: TFDS data directory for `tfds:NAME`.
        quick: Use the small inputs (ResNet-50 at 32x32, short sequences).
        run_timeout_s: Seconds before one run is stopped and recorded as
            an error.
    """

    models: tuple[str, ...] = tuple(models.MODELS)
    modes: tuple[str, ...] = modes.MODES
    replicas: tuple[int, ...] = (1, 2, 4)
    global_batch_size: int = 64
    steps: int = 10
    rounds: int = 20
    warmup_steps: int = 5
    dataset: str = datasets.SYNTHETIC
    data_dir: str | None = None
    quick: bool = False
    run_timeout_s: float = 1800.0

    def __post_init__(self):
        models.check_names(self.models)
        modes.check_names(self.modes)
        datasets.parse(self.dataset)
        for name in ("global_batch_size", "steps", "rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}.")
        if self.warmup_steps < 0:
            raise ValueError(
                f"warmup_steps must be >= 0. Received: warmup_steps={self.warmup_steps!r}."
            )
        if not self.replicas or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.replicas
        ):
            raise ValueError(
                "replicas must be a non-empty list of positive integers. "
                f"Received: replicas={list(self.replicas)!r}. Example: 1,2,4."
            )

    @property
    def simulated_devices(self) -> int:
        """Devices each measuring process simulates: max(replicas).

        Every run sees the same device layout, so `single` on device 0 and
        `mirrored` on devices 0..N-1 compete for the same cores the same way.
        """
        return max(self.replicas)

    def replace(self, **changes) -> SuiteConfig:
        return dataclasses.replace(self, **changes)


# Small enough for a loaded 2-core machine: fewer rows, not fewer
# repetitions. The three models that say something at small size (ResNet-50,
# even at 32x32, took most of the time and timed out at load average 7-18,
# so it is left to the full suite), the modes that run in one process, 1 and
# 2 replicas, shorter rounds; as many rounds as the full suite, so its
# intervals and its A/A control are as honest. The timeout is generous: a
# quick run is never stopped for being slow, only for hanging.
QUICK = SuiteConfig(
    models=("mlp", "cnn", "two_branch_lstm"),
    modes=(
        modes.SINGLE,
        modes.MIRRORED,
        modes.MULTI_GPU_MODEL,
        modes.CPU_RELOCATION,
        modes.DEVICE_PARALLEL,
    ),
    replicas=(1, 2),
    global_batch_size=32,
    steps=5,
    warmup_steps=3,
    quick=True,
    run_timeout_s=900.0,
)


def plan(config: SuiteConfig) -> tuple[list[RunSpec], list[dict]]:
    """The runs of `config`, in order, and the combinations skipped.

    `single` always runs at 1 replica when it is among the modes (the other
    figures are relative to it), even if 1 is not in `replicas`.

    Returns:
        `(runs, skipped)`: run specs (per model: `single`, then each mode by
        replica count), and dicts with `model`, `mode`, `replicas`, `reason`.
    """
    runs, skipped = [], []
    counts = sorted(set(config.replicas))
    for model in config.models:
        for mode in _ordered(config.modes):
            for replicas in [1] if mode == modes.SINGLE else counts:
                reason = modes.not_applicable(model, mode, replicas, config.global_batch_size)
                if reason is None:
                    runs.append(RunSpec(model, mode, replicas))
                else:
                    skipped.append(
                        {"model": model, "mode": mode, "replicas": replicas, "reason": reason}
                    )
    return runs, skipped


def _ordered(names: Sequence[str]) -> list[str]:
    # Baselines first, so a reader of the progress lines sees them first.
    return sorted(set(names), key=modes.MODES.index)
