"""Session tuning: thread counts and executor settings that respect the CPU time this process may use.

Not a graph change: it yields SessionOptions for the search to try on an already chosen model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from turboinfer.hardware.probe import CpuInfo
from turboinfer.runtime.session import SessionOptions


@dataclass(frozen=True)
class SessionTuningConfig:
    """Which executor settings to try."""

    threads: tuple[int, ...] = ()
    """Intra-op thread counts; empty = 1 and every count up to the usable CPUs (cgroup quota, affinity)."""
    try_parallel: bool = False
    """Also try ORT's parallel executor (helps only graphs with independent branches)."""
    try_no_arena: bool = False
    """Also try ORT without its memory arena and memory patterns (less memory held, slower allocation)."""
    SEARCHABLE: ClassVar[tuple[str, ...]] = ("threads", "try_parallel", "try_no_arena")


def thread_choices(cpu: CpuInfo, config: SessionTuningConfig) -> tuple[int, ...]:
    """Thread counts to try, never above the usable CPUs (more threads than the quota only adds contention)."""
    wanted = config.threads or tuple(sorted({1, cpu.usable_cpus}))
    return tuple(t for t in wanted if 1 <= t <= cpu.usable_cpus)


def tuned_options(base: SessionOptions, cpu: CpuInfo, config: SessionTuningConfig) -> list[SessionOptions]:
    """Variants of base: each thread count, and the parallel executor when asked; base itself left out."""
    options = [replace(base, intra_threads=t) for t in thread_choices(cpu, config)]
    if config.try_parallel:
        options.append(replace(base, parallel=True, inter_threads=cpu.usable_cpus))
    if config.try_no_arena:
        options.append(replace(base, memory_arena=False))
    return [o for o in options if o != base]
