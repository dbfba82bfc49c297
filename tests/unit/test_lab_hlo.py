"""scaleout.lab.hlo: collectives and memory read from XLA's HLO text (pure parsing, no JAX)."""
# ruff: noqa: E501  (HLO lines are quoted as XLA prints them)

import pytest
from scaleout.lab import hlo

# Lines in the forms XLA 0.10 prints (trimmed), plus the older explicit and async forms.
TEXT = """
HloModule jit_step, entry_computation_layout={...}
%fused_computation (p: f32[8]) -> f32[8] { ROOT %x = f32[8] add(%p, %p) }
ENTRY %main.1 (param: f32[8,32,64]) -> f32[] {
  %all-reduce = f32[8,32,64]{2,1,0} all-reduce(%bitcast.19), channel_id=1, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add.clone, metadata={op_name="jit(step)/jvp()/dot_general" stack_frame_id=27}
  %all-reduce.30 = (f32[256]{0}, f32[64,256]{1,0}, f32[]) all-reduce(%a, %b, %c), channel_id=2, replica_groups=mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}, use_global_device_ids=true, to_apply=%add.7, metadata={op_name="jit(step)/transpose(jvp())/dot_general"}
  %all-gather.3 = f32[64,192]{1,0} all-gather(%p.3), channel_id=3, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(step)/transpose(jvp(jvp()))/checkpoint/rematted_computation/sharding_constraint"}
  %reduce-scatter = bf16[2,64]{1,0} reduce-scatter(%g), channel_id=4, replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}, to_apply=%add
  %all-to-all = (f32[1,8,64]{2,1,0}, f32[1,8,64]{2,1,0}) all-to-all(%x0, %x1), channel_id=5, replica_groups={{0,1}}, dimensions={0}
  %all-gather-start = (f32[16]{0}, f32[128]{0}) all-gather-start(%y), channel_id=6, replica_groups={}, dimensions={0}
  %all-gather-done = f32[128]{0} all-gather-done(%all-gather-start)
  %collective-permute = s32[8,3]{1,0} collective-permute(%i), channel_id=7, source_target_pairs={{0,1},{1,2},{2,3}}
  ROOT %r = f32[] add(%z, %z)
}
"""


def test_every_collective_kind_size_and_group():
    cs = hlo.parse_collectives(TEXT, n_devices=8)
    assert [c.kind for c in cs] == ["all-reduce", "all-reduce", "all-gather", "reduce-scatter",
                                    "all-to-all", "all-gather", "collective-permute"]
    ar, tup, ag, rs, a2a, ags, cp = cs
    assert ar.size_bytes == 8 * 32 * 64 * 4 and ar.group_size == 4 and ar.n_groups == 2
    assert ar.groups == ((0, 1, 2, 3), (4, 5, 6, 7)) and not ar.backward
    # a tuple all-reduce: one instruction, the parts' sizes summed; the mesh-axes form
    assert tup.part_bytes == (1024.0, 65536.0, 4.0) and tup.size_bytes == 66564
    assert tup.groups == ((0, 4), (1, 5), (2, 6), (3, 7)) and tup.backward
    assert ag.size_bytes == 64 * 192 * 4 and ag.group_size == 4
    assert "rematted_computation" in ag.op_name
    # reduce-scatter: nccl-tests' size is the full input, the result times the group
    assert rs.dtype == "bf16" and rs.size_bytes == 2 * 64 * 2 * 2
    assert rs.groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert a2a.size_bytes == 2 * 8 * 64 * 4 and a2a.group_size == 2
    # async all-gather: the result half of the start's tuple, "{}" = all devices, done skipped
    assert ags.size_bytes == 128 * 4 and ags.groups == (tuple(range(8)),)
    assert cp.group_size == 2 and cp.n_groups == 3
    by = hlo.collectives_by_kind(cs)
    assert by["all-reduce"] == {"count": 2, "size_bytes": 65536 + 66564}
    assert tup.shape_text == "f32[256] + f32[64,256] + f32[]"


@pytest.mark.parametrize(("attrs", "groups"), [
    ("replica_groups=[1,4]<=[4], x", ((0, 1, 2, 3),)),
    ("replica_groups=[2,2]<=[2,2]T(1,0)", ((0, 2), (1, 3))),
    ("replica_groups=mesh['a'=2,'b'=2] {'b'}", ((0, 1), (2, 3))),
    ("replica_groups=mesh['a'=2,'b'=3] {'a','b'}", ((0, 1, 2, 3, 4, 5),)),
    ("replica_groups={{0,2},{1,3}}", ((0, 2), (1, 3))),
])
def test_replica_group_forms(attrs, groups):
    assert hlo.parse_replica_groups(attrs, 4) == groups


def test_bad_text_names_what_is_wrong():
    with pytest.raises(ValueError, match="unrecognised replica_groups format"):
        hlo.parse_replica_groups("replica_groups=nonsense")
    with pytest.raises(ValueError, match=r"names axes \['c'\] not in its mesh"):
        hlo.parse_replica_groups("replica_groups=mesh['a'=2] {'c'}")
    with pytest.raises(ValueError, match="needs n_devices"):
        hlo.parse_replica_groups("replica_groups={}")
    with pytest.raises(ValueError, match="unknown HLO element type 'f99'"):
        hlo.parse_collectives("%x = f99[4]{0} all-reduce(%y), replica_groups={{0,1}}")


def test_memory_stats():
    class Analysis:
        argument_size_in_bytes, output_size_in_bytes = 100, 80
        alias_size_in_bytes, temp_size_in_bytes = 30, 7

    stats = hlo.memory_stats(Analysis())
    assert stats.peak_bytes == 100 + 80 - 30 + 7
    with pytest.raises(ValueError, match="not an XLA memory analysis"):
        hlo.memory_stats(object())
