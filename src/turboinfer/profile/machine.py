"""The probe report: static machine facts plus measured ceilings (GEMM peaks, memory bandwidth)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from turboinfer.core.types import Metric
from turboinfer.hardware.capsule import environment_capsule
from turboinfer.hardware.peaks import gemm_fp32_gflops, memory_bandwidth_gbps
from turboinfer.hardware.probe import MachineInfo, probe_machine
from turboinfer.runtime.microbench import gemm_throughput, measurable_kinds


@dataclass(frozen=True)
class ProbeReport:
    """What `turboinfer probe` finds: the machine, its measured ceilings, and how long probing took."""

    machine: MachineInfo
    ceilings: tuple[Metric, ...]
    seconds: float
    environment: dict[str, Any] = field(default_factory=dict)

    def peak(self, name: str) -> float | None:
        """Value of a ceiling by name (e.g. "fp32_gemm_2t"), None if it was not measured."""
        return next((m.value for m in self.ceilings if m.name == name), None)

    def native_peak(self, name: str) -> float | None:
        """Like peak, but None when the runtime fell back to another precision (no native support)."""
        metric = next((m for m in self.ceilings if m.name == name), None)
        return metric.value if metric is not None and metric.extra.get("native", True) else None

    def to_dict(self) -> dict[str, Any]:
        """JSON form; `peaks.fp32_gflops` and `peaks.mem_bandwidth_gbps` are all-thread figures."""
        threads = self.machine.cpu.usable_cpus
        return {
            "cpu": self.machine.to_dict()["cpu"],
            "memory_gib": self.machine.memory_gib,
            "memory_limit_gib": self.machine.memory_limit_gib,
            "gpus": [g.__dict__ for g in self.machine.gpus],
            "gpu_probe": self.machine.gpu_probe,
            "peaks": {
                "fp32_gflops": self.peak(f"fp32_gemm_{threads}t"),
                "fp32_gflops_1t": self.peak("fp32_gemm_1t"),
                "mem_bandwidth_gbps": self.peak(f"mem_copy_{threads}t"),
                "int8_gops": self.peak(f"int8_gemm_{threads}t"),
                "bf16_gops": self.native_peak(f"bf16_gemm_{threads}t"),
            },
            "measurements": [m.to_dict() for m in self.ceilings],
            "probe_seconds": round(self.seconds, 2),
            "environment": self.environment,
        }


def run_probe() -> ProbeReport:
    """Probe the machine and measure its ceilings with 1 thread and with all usable threads."""
    start = time.perf_counter()
    machine = probe_machine()
    counts = sorted({1, machine.cpu.usable_cpus})
    ceilings: list[Metric] = []
    for threads in counts:
        ceilings.append(gemm_fp32_gflops(threads))
        ceilings.append(memory_bandwidth_gbps(threads))
        ceilings.extend(gemm_throughput(kind, threads) for kind in measurable_kinds())
    return ProbeReport(machine, tuple(ceilings), time.perf_counter() - start, environment_capsule())
