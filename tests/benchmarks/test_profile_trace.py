"""benchmarks/profile_trace.py: device kernels summed by name and category from a hand-built Perfetto trace (the
enclosing module line is not counted twice), the host fallback when a trace has no device track, and one real
trace of a jitted call on this CPU."""
import pytest

from benchmarks import profile_trace as pt


def _meta(kind, pid, name, tid=None):
  e = {"ph": "M", "name": kind, "pid": pid, "args": {"name": name}}
  if tid is not None:
    e["tid"] = tid
  return e


def _x(pid, tid, name, dur_us):
  return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": 0, "dur": dur_us}


def test_device_kernels_are_summed_by_name_and_category():
  events = [
      _meta("process_name", 1, "/host:CPU"), _meta("process_name", 7, "/device:GPU:0"),
      _meta("thread_name", 7, "Stream #13(Compute)", tid=13), _meta("thread_name", 7, "XLA Modules", tid=2),
      _x(1, 1, "PjitFunction(step)", 900_000),                       # host: not device time
      _x(7, 2, "jit_step", 500_000),                                 # encloses the kernels below
      _x(7, 13, "sm90_xmma_gemm_bf16bf16_bf16f32", 200_000), _x(7, 13, "sm90_xmma_gemm_bf16bf16_bf16f32", 100_000),
      _x(7, 13, "cudnn_generated_fort_native_sdpa_sm90", 50_000), _x(7, 13, "loop_multiply_fusion", 30_000),
      _x(7, 13, "Memcpy DtoD", 20_000),
  ]
  s = pt.summarize_trace(events, wall_s=0.5, top=3)
  assert s["track"] == "device" and s["kernels"] == 5
  assert s["busy_s"] == pytest.approx(0.4) and s["busy_fraction_of_wall"] == pytest.approx(0.8)
  assert s["category_s"] == pytest.approx({"attention": 0.05, "copy": 0.02, "matmul": 0.3, "other": 0.03})
  assert [t["name"] for t in s["top"]] == ["sm90_xmma_gemm_bf16bf16_bf16f32", "cudnn_generated_fort_native_sdpa_sm90",
                                           "loop_multiply_fusion"]
  assert s["top"][0]["calls"] == 2 and s["top"][0]["share_of_busy"] == pytest.approx(0.75)
  assert s["device_lines_s"] == pytest.approx({"/device:GPU:0 XLA Modules": 0.5,
                                               "/device:GPU:0 Stream #13(Compute)": 0.4})


def test_without_a_device_track_the_host_xla_ops_are_summed():
  events = [_meta("process_name", 1, "/host:CPU"), _x(1, 1, "PjitFunction(step)", 900),
            _x(1, 1, "$profiler.py:307 trace", 1000), _x(1, 1, "dot_fusion", 300), _x(1, 1, "add_fusion", 100)]
  s = pt.summarize_trace(events, wall_s=0.001)
  assert s["track"].startswith("host") and s["kernels"] == 2
  assert s["busy_s"] == pytest.approx(0.0004) and s["category_s"] == pytest.approx({"matmul": 0.0003, "other": 0.0001})


def test_profile_call_traces_one_jitted_call(tmp_path):
  import jax
  import jax.numpy as jnp
  f = jax.jit(lambda x: jnp.tanh(x @ x).sum())
  x = jnp.ones((128, 128))
  f(x).block_until_ready()
  s = pt.profile_call(lambda: f(x).block_until_ready(), str(tmp_path), reference_s=0.25)
  assert s["wall_s"] == 0.25 and s["traced_wall_s"] > 0 and s["kernels"] >= 1 and s["busy_s"] > 0
  assert list(tmp_path.rglob("perfetto_trace.json.gz"))
