import json

from turboinfer.hardware.capsule import environment_capsule
from turboinfer.hardware.probe import (
    ISA_FLAGS,
    cgroup_cpu_quota,
    cgroup_memory_limit_gib,
    parse_cpu_max,
    probe_machine,
    read_cpuinfo,
)

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_2 avx avx2 avx512f avx512_vnni amx_int8 amx_bf16 amx_tile
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
"""


def test_cpuinfo_parsing():
    model, flags = read_cpuinfo(CPUINFO)
    assert model == "Intel(R) Xeon(R) Platinum 8480+"
    assert {"avx512_vnni", "amx_int8", "amx_bf16"} <= flags


def test_cgroup_quota_v2(tmp_path):
    assert parse_cpu_max("max 100000") is None
    assert parse_cpu_max("150000 100000") == 1.5
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    (tmp_path / "memory.max").write_text(str(4 * 2**30))
    assert cgroup_cpu_quota(tmp_path) == 2.0
    assert cgroup_memory_limit_gib(tmp_path) == 4.0


def test_cgroup_quota_v1_and_unlimited(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert cgroup_cpu_quota(tmp_path) is None
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000")
    assert cgroup_cpu_quota(tmp_path) == 0.5
    assert cgroup_memory_limit_gib(tmp_path) is None


def test_probe_this_machine():
    info = probe_machine()
    assert info.cpu.cores >= 1
    assert 1 <= info.cpu.usable_cpus <= info.cpu.cores
    assert set(info.cpu.isa) <= set(ISA_FLAGS)
    assert info.memory_gib > 0
    json.dumps(info.to_dict())


def test_environment_capsule_names_versions_and_cpu():
    capsule = environment_capsule(command=["turboinfer", "probe"], settings={"threads": 2})
    assert capsule["packages"]["onnxruntime"]
    assert capsule["command"] == ["turboinfer", "probe"]
    assert capsule["cpu"]["cores"] >= 1
    assert capsule["settings"] == {"threads": 2}
