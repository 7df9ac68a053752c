"""benchmarks/roofline.py on exact values: collective bytes from a hand-written HLO module (a while loop with a
known trip count, a nested loop, a called computation, async and sync collectives, both replica-group forms),
and a matmul compiled on this CPU whose cost flops are 2·m·n·k and whose roofline is flops / peak."""
import jax
import jax.numpy as jnp
import pytest

from benchmarks import roofline as rf

# Per-chip HLO of 8 chips. Entry: one all-reduce of f32[256] (1 KiB) over groups of 4 and a while (trip 3)
# whose body all-gathers bf16[64,128] (16 KiB gathered) over all 8 chips (replica_groups={}), calls a
# computation that reduce-scatters f32[1024] (4 KiB in) over iota groups of 4, and runs an inner while
# (trip 2) with a collective-permute of f32[16] (64 B) and an async all-gather (f32[8,32] out, 1 KiB) over 2.
HLO = """HloModule test, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%scatter_it (p: f32[1024]) -> f32[256] {
  %p = f32[1024]{0} parameter(0)
  ROOT %rs = f32[256]{0} reduce-scatter(%p), replica_groups=[2,4]<=[8], dimensions={0}, to_apply=%add
}

%inner_body (t: (s32[], f32[16], f32[4,32])) -> (s32[], f32[16], f32[4,32]) {
  %t = (s32[], f32[16]{0}, f32[4,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[16]{0} get-tuple-element(%t), index=1
  %y = f32[4,32]{1,0} get-tuple-element(%t), index=2
  %cp = f32[16]{0} collective-permute(%x), source_target_pairs={{0,1},{1,0}}
  %ags = (f32[4,32]{1,0}, f32[8,32]{1,0}) all-gather-start(%y), replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}
  %agd = f32[8,32]{1,0} all-gather-done(%ags)
  ROOT %r = (s32[], f32[16]{0}, f32[4,32]{1,0}) tuple(%i, %cp, %y)
}

%inner_cond (t: (s32[], f32[16], f32[4,32])) -> pred[] {
  %t.1 = (s32[], f32[16]{0}, f32[4,32]{1,0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%t.1), index=0
  %c = s32[] constant(2)
  ROOT %lt = pred[] compare(%i.1, %c), direction=LT
}

%outer_body (u: (s32[], bf16[8,128], f32[1024])) -> (s32[], bf16[8,128], f32[1024]) {
  %u = (s32[], bf16[8,128]{1,0}, f32[1024]{0}) parameter(0)
  %j = s32[] get-tuple-element(%u), index=0
  %w = bf16[8,128]{1,0} get-tuple-element(%u), index=1
  %g = f32[1024]{0} get-tuple-element(%u), index=2
  %ag = bf16[64,128]{1,0} all-gather(%w), replica_groups={}, dimensions={0}
  %sc = f32[256]{0} call(%g), to_apply=%scatter_it
  %z = f32[16]{0} constant({...})
  %q = f32[4,32]{1,0} constant({...})
  %it = (s32[], f32[16]{0}, f32[4,32]{1,0}) tuple(%j, %z, %q)
  %inner = (s32[], f32[16]{0}, f32[4,32]{1,0}) while(%it), condition=%inner_cond, body=%inner_body, backend_config={"known_trip_count":{"n":"2"}}
  ROOT %o = (s32[], bf16[8,128]{1,0}, f32[1024]{0}) tuple(%j, %w, %g)
}

%outer_cond (u: (s32[], bf16[8,128], f32[1024])) -> pred[] {
  %u.1 = (s32[], bf16[8,128]{1,0}, f32[1024]{0}) parameter(0)
  %j.1 = s32[] get-tuple-element(%u.1), index=0
  %c.1 = s32[] constant(3)
  ROOT %lt.1 = pred[] compare(%j.1, %c.1), direction=LT
}

ENTRY %main (v: f32[256], w0: bf16[8,128], g0: f32[1024]) -> f32[256] {
  %v = f32[256]{0} parameter(0)
  %w0 = bf16[8,128]{1,0} parameter(1)
  %g0 = f32[1024]{0} parameter(2)
  %ar = f32[256]{0} all-reduce(%v), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add
  %zero = s32[] constant(0)
  %init = (s32[], bf16[8,128]{1,0}, f32[1024]{0}) tuple(%zero, %w0, %g0)
  %loop = (s32[], bf16[8,128]{1,0}, f32[1024]{0}) while(%init), condition=%outer_cond, body=%outer_body, backend_config={"known_trip_count":{"n":"3"},"known_init_step":{"init":"0","step":"1"}}
  ROOT %out = f32[256]{0} add(%ar, %ar)
}
"""


def test_collective_bytes_with_trip_counts():
  t = rf.hlo_totals(HLO, num_devices=8)
  c = t["collectives"]
  assert c["all-reduce"] == {"count": 1, "bytes": 1024.0, "ici_bytes": 1024.0 * 2 * 3 / 4}
  assert c["all-gather"]["count"] == 3 + 3 * 2
  assert c["all-gather"]["bytes"] == 3 * 64 * 128 * 2 + 6 * 8 * 32 * 4
  assert c["all-gather"]["ici_bytes"] == 3 * 16384 * 7 / 8 + 6 * 1024 * 1 / 2
  assert c["reduce-scatter"] == {"count": 3, "bytes": 3 * 4096.0, "ici_bytes": 3 * 4096.0 * 3 / 4}
  assert c["collective-permute"] == {"count": 6, "bytes": 6 * 64.0, "ici_bytes": 6 * 64.0}
  assert c["all-to-all"]["count"] == 0
  assert t["collective_ici_bytes"] == 1536.0 + 43008.0 + 3072.0 + 9216.0 + 384.0
  assert sorted(t["loops"]) == [(2, "inner_body"), (3, "outer_body")]
  assert t["unknown_trip_counts"] == 0


def test_replica_group_forms_and_shape_bytes():
  assert rf.group_size("replica_groups=[4,8]<=[32]", 32) == 8
  assert rf.group_size("replica_groups=[2,16]<=[16,2]T(1,0)", 32) == 16
  assert rf.group_size("replica_groups={{0,2},{1,3}}", 4) == 2
  assert rf.group_size("replica_groups={}", 32) == 32
  assert rf.group_size("replica_groups=mesh['axis_0'=32,'axis_1'=1] {'axis_0'}, dimensions={1}", 32) == 32
  assert rf.group_size("replica_groups=mesh['axis_0'=8,'axis_1'=4] {'axis_0','axis_1'}", 32) == 32
  assert rf.group_size("replica_groups=mesh['x'=8,'y'=4] {'y'}", 32) == 4
  assert rf.shape_bytes("(bf16[4,8]{1,0:T(8,128)(2,1)}, f32[3]{0}, s32[])") == 64 + 12 + 4
  assert rf.shape_bytes("token[]") == 0


def test_missing_trip_count_counts_once_and_is_reported():
  hlo = HLO.replace(', backend_config={"known_trip_count":{"n":"2"}}', "")
  t = rf.hlo_totals(hlo, num_devices=8)
  assert t["unknown_trip_counts"] == 1
  assert t["collectives"]["collective-permute"]["count"] == 3


def test_matmul_cost_and_roofline_on_cpu():
  m, n, k = 64, 32, 48
  compiled = jax.jit(lambda a, b: a @ b).lower(jnp.zeros((m, k), jnp.float32),
                                               jnp.zeros((k, n), jnp.float32)).compile()
  cost = compiled.cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  assert cost["flops"] == 2 * m * n * k
  walk = rf.hlo_totals(compiled.as_text(), num_devices=1)
  assert walk["flops"] == 2 * m * n * k and walk["flops_loop_extra"] == 0
  assert walk["bytes"] == cost["bytes accessed"] == 4 * (m * k + k * n + m * n)
  assert walk["collective_ici_bytes"] == 0
  chip = rf.ChipSpec("made-up", peak_flops=1e9, hbm_bw=1e12, ici_bw=1e9, hbm_bytes=1 << 30)
  r = rf.roofline(cost["flops"], cost["bytes accessed"], 0.0, chip)
  assert r["bound"] == "compute" and r["time_s"] == cost["flops"] / 1e9
  assert r["sum_s"] == pytest.approx(cost["flops"] / 1e9 + cost["bytes accessed"] / 1e12)
  assert rf.mfu(cost["flops"] / 2, r["time_s"], chip) == 0.5


def test_scan_loop_extra_restores_the_iterations_xla_counts_once():
  def f(w, x):
    return jax.lax.scan(lambda c, wi: (c @ wi, None), x, w)[0]
  compiled = jax.jit(f).lower(jnp.zeros((5, 64, 64)), jnp.zeros((8, 64))).compile()
  cost = compiled.cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  walk = rf.hlo_totals(compiled.as_text(), num_devices=1)
  one = 2 * 8 * 64 * 64
  assert walk["loops"][0][0] == 5
  assert walk["flops"] == 5 * one and walk["flops_loop_extra"] == 4 * one
  assert cost["flops"] + walk["flops_loop_extra"] == pytest.approx(5 * one, rel=1e-3)  # XLA adds the counter


def test_roofline_bound_and_model_flops():
  chip = rf.CHIPS["v5p"]
  r = rf.roofline(459e12, 2765e9 * 2, 600e9 * 0.5, chip)
  assert (r["compute_s"], r["memory_s"], r["collective_s"]) == (1.0, 2.0, 0.5)
  assert r["bound"] == "memory" and r["time_s"] == 2.0 and r["sum_s"] == 3.5
  assert rf.model_flops("train", 10, 7) == 420 and rf.model_flops("decode", 10, 3) == 60
  assert rf.model_flops("update", 10, 7) == 0 and rf.mfu(0.0, 1.0, chip) is None


def test_convolution_flops_match_xla_on_cpu():
  x = jnp.zeros((2, 9, 11, 6), jnp.float32)       # NHWC
  w = jnp.zeros((3, 2, 6, 4), jnp.float32)        # HWIO
  f = lambda a, b: jax.lax.conv_general_dilated(  # noqa: E731
      a, b, window_strides=(2, 1), padding=((1, 2), (0, 1)), rhs_dilation=(1, 2),
      dimension_numbers=("NHWC", "HWIO", "NHWC"))
  compiled = jax.jit(f).lower(x, w).compile()
  cost = compiled.cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  assert rf.hlo_totals(compiled.as_text(), num_devices=1)["flops"] == cost["flops"]


def test_tpu_batched_matmul_written_as_dilated_convolution():
  # as the TPU compiler writes q·kᵀ per (768 x 16) batch: a window spanning the batch dims with lhs dilation
  hlo = """HloModule m
ENTRY %e (a: bf16[768,64,16,80], b: bf16[768,64,16,80]) -> f32[768,16,64,64] {
  %a = bf16[768,64,16,80]{3,1,2,0} parameter(0)
  %b = bf16[768,64,16,80]{3,1,2,0} parameter(1)
  ROOT %c = f32[768,16,64,64]{3,2,1,0} convolution(%a, %b), window={size=768x16 stride=767x15 lhs_dilate=768x16}, dim_labels=0b1f_0o1i->01bf
}
"""
  assert rf.hlo_totals(hlo, num_devices=1)["flops"] == 2 * 768 * 16 * 64 * 64 * 80
