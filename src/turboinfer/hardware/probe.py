"""Static facts about the machine: CPU model, ISA flags, cores, cgroup quota, memory, GPUs."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "amx_fp16",
)
"""The flags that decide which kernels a runtime can pick (VNNI/AMX for INT8, AMX/avx512_bf16 for BF16)."""


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML reports it."""

    name: str
    memory_gib: float
    driver: str


@dataclass(frozen=True)
class CpuInfo:
    """The CPU as the OS reports it, plus the CPU time this process may actually use."""

    model: str
    arch: str
    cores: int
    """Logical CPUs this process may run on (affinity)."""
    physical_cores: int | None
    quota_cpus: float | None
    """cgroup CPU quota in CPUs (cpu.max), None when unlimited."""
    isa: tuple[str, ...]

    @property
    def usable_cpus(self) -> int:
        """Threads worth running: affinity capped by the cgroup quota, at least 1."""
        if self.quota_cpus is None:
            return self.cores
        return max(1, min(self.cores, int(self.quota_cpus)))


@dataclass(frozen=True)
class MachineInfo:
    """Everything probe_machine finds, JSON-ready via to_dict."""

    cpu: CpuInfo
    memory_gib: float
    memory_limit_gib: float | None
    gpus: tuple[GpuInfo, ...] = field(default_factory=tuple)
    gpu_probe: str = ""
    """How GPUs were looked for and why none were found, if none were."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["cpu"]["usable_cpus"] = self.cpu.usable_cpus
        return data


def read_cpuinfo(text: str) -> tuple[str, set[str]]:
    """Model name and flag set from the text of /proc/cpuinfo."""
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, flags


def parse_cpu_max(text: str) -> float | None:
    """CPUs allowed by a cgroup v2 cpu.max line ("max 100000" → None, "150000 100000" → 1.5)."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    return int(parts[0]) / int(parts[1])


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The cgroup CPU quota in CPUs (v2 cpu.max, else v1 cfs files), None when unlimited."""
    v2 = root / "cpu.max"
    if v2.is_file():
        return parse_cpu_max(v2.read_text())
    quota, period = root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"
    if quota.is_file() and period.is_file():
        q = int(quota.read_text())
        return None if q <= 0 else q / int(period.read_text())
    return None


def cgroup_memory_limit_gib(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The cgroup memory limit in GiB, None when unlimited."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        if path.is_file():
            raw = path.read_text().strip()
            if raw == "max" or int(raw) >= 1 << 60:
                return None
            return int(raw) / 2**30
    return None


def available_memory_bytes() -> float:
    """Memory a new allocation can get now: the OS's available memory, capped by the cgroup limit's headroom."""
    available = float(psutil.virtual_memory().available)
    limit = cgroup_memory_limit_gib()
    if limit is not None:
        available = min(available, limit * 2**30 - psutil.Process().memory_info().rss)
    return available


def probe_gpus() -> tuple[tuple[GpuInfo, ...], str]:
    """GPUs via NVML (pynvml), with a note on how they were looked for."""
    try:
        import pynvml
    except ImportError:
        return (), "pynvml not installed; no NVIDIA GPU checked"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return (), f"NVML unavailable: {err}"
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total / 2**30
            gpus.append(GpuInfo(str(name), round(memory, 1), str(pynvml.nvmlSystemGetDriverVersion())))
        return tuple(gpus), "NVML"
    finally:
        pynvml.nvmlShutdown()


def probe_cpu() -> CpuInfo:
    """The CPU model, ISA flags that matter, cores and quota of this process."""
    cpuinfo = Path("/proc/cpuinfo")
    model, flags = read_cpuinfo(cpuinfo.read_text()) if cpuinfo.is_file() else ("", set())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return CpuInfo(
        model=model or platform.processor() or "unknown",
        arch=platform.machine(),
        cores=cores,
        physical_cores=psutil.cpu_count(logical=False),
        quota_cpus=cgroup_cpu_quota(),
        isa=tuple(flag for flag in ISA_FLAGS if flag in flags),
    )


def probe_machine() -> MachineInfo:
    """Static facts about this machine (no timing; see peaks for measured ceilings)."""
    gpus, how = probe_gpus()
    return MachineInfo(
        cpu=probe_cpu(),
        memory_gib=round(psutil.virtual_memory().total / 2**30, 1),
        memory_limit_gib=cgroup_memory_limit_gib(),
        gpus=gpus,
        gpu_probe=how,
    )
