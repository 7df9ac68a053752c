"""benchmarks/gpu_suite.py on this CPU: one smoke run of every section (a subprocess, as the device tool runs it),
whose figures are recomputed here from the inputs the JSON records; the counting against published parameter
counts and hand sums; a section that raises (its own process) records its error while the next one runs; an
OOM on a train shape retries with fewer layers; the suite imports without grain or ml-collections."""
import json
import math
import os
import statistics
import subprocess
import sys

import pytest

from benchmarks import gpu_suite as suite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = [name for name, _ in suite.SECTIONS]


def _run_suite(tmp_path, *args, timeout=600) -> dict:
  out = tmp_path / "suite.json"
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu_suite", "--json", str(out), *args], cwd=ROOT,
                        env=env, capture_output=True, text=True, timeout=timeout)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return json.loads(out.read_text())


@pytest.fixture(scope="module")
def smoke(request, tmp_path_factory):
  """One smoke run per test session: xdist workers share it through this run's temp root (the run is ~2 minutes
  of a 2-core CPU)."""
  from filelock import FileLock
  shared = tmp_path_factory.getbasetemp()
  if hasattr(request.config, "workerinput"):          # an xdist worker: the parent folder is this run's
    shared = shared.parent
  path = shared / "gpu_suite_smoke.json"
  with FileLock(str(path) + ".lock"):
    if not path.exists():
      path.write_text(json.dumps(_run_suite(tmp_path_factory.mktemp("gpu_suite"))))
  return json.loads(path.read_text())


def _timings(node, path=""):
  """Every timing dict (one with times_s) in the JSON, with its path."""
  if isinstance(node, dict):
    if "times_s" in node:
      yield path, node
    for k, v in node.items():
      yield from _timings(v, f"{path}.{k}")


def test_every_section_ran_in_smoke_mode(smoke):
  assert smoke["meta"]["mode"] == "smoke" and smoke["meta"]["backend"] == "cpu"
  assert smoke["meta"]["recipe"]["spec"] == suite.RECIPE and smoke["meta"]["recipe"]["remat_policy"] == "full"
  for name in SECTIONS:
    assert smoke[name]["status"] == "ok", (name, smoke[name].get("error"))
  for name in ("train_jax", "train_torch"):
    assert set(smoke[name]["shapes"]) == {"1.5b_text", "7b_width_screenshot"}
    assert all(e["status"] == "ok" for e in smoke[name]["shapes"].values())
  for name in ("sampler_jax", "sampler_torch"):
    assert list(smoke[name]["batches"]) == [str(b) for b in smoke["meta"]["plan"]["sampler"]["batches"]]


def test_one_step_of_each_jax_shape_and_the_largest_batch_are_traced(smoke):
  largest = str(max(smoke["meta"]["plan"]["sampler"]["batches"]))
  traced = list(smoke["train_jax"]["shapes"].values()) + [smoke["sampler_jax"]["batches"][largest]]
  for e in traced:
    p = e["profile"]
    assert p["track"].startswith("host") and p["kernels"] >= 1 and p["busy_s"] > 0   # a CPU has no device track
    assert p["wall_s"] == e.get("timing", e.get("generate", {})).get("median_s", p["wall_s"])


def test_text_rows_are_also_timed_under_the_other_remat_policies():
  """with_remat_variants over a fake step: text rows run once per other policy (one micro-batch, untraced), a
  failing policy records its error, screenshot rows run the recipe's policy only; MFU from each median."""
  from benchmarks.gpu_suite_jax import with_remat_variants
  from benchmarks.timing import Timing
  recipe = suite.load_recipe()
  ctx = {"plan": suite.make_plan(True, recipe, 5, 0), "recipe": recipe, "results": {}}
  report, calls = suite.Report(), []
  report["peak"] = {"peak_flops": 1e12}

  def step_fn(cfg, inputs):
    calls.append((cfg.remat_policy, inputs["grid"] is None, inputs["micro_batches"], inputs.get("profile", True)))
    if cfg.remat_policy == "none":
      raise RuntimeError("RESOURCE_EXHAUSTED: out of memory")
    median = {"full": 1.0, "dots_saveable": 0.5}[cfg.remat_policy]
    return Timing(1.0, 0, [median] * 5, [0.0] * 5), {"loss": 1.0}
  suite.run_train_shapes(ctx, report, with_remat_variants(step_fn, ["full", "dots_saveable", "none"]),
                         memory_bytes=None, reuse_layers={})
  text, shot = report["shapes"]["1.5b_text"], report["shapes"]["7b_width_screenshot"]
  assert calls == [("full", True, 2, True), ("dots_saveable", True, 1, False), ("none", True, 1, False),
                   ("full", False, 2, True)]
  assert text["remat_variants"]["dots_saveable"]["mfu"] == pytest.approx(text["flops"]["total"] / 0.5 / 1e12)
  assert text["remat_variants"]["none"] == {"status": "error",
                                            "error": "RuntimeError: RESOURCE_EXHAUSTED: out of memory"}
  assert text["mfu"] == pytest.approx(text["flops"]["total"] / 1e12) and "remat_variants" not in shot


def test_train_shapes_run_in_the_order_asked():
  assert [n for n, _ in suite.train_shapes({})] == list(suite.TRAIN_SHAPES)
  assert suite.train_shapes({"shapes": ["7b_width_screenshot", "1.5b_text"]}) == [
      ("7b_width_screenshot", {"model": "7b_width", "screenshot": True}),
      ("1.5b_text", {"model": "1.5b", "screenshot": False})]
  with pytest.raises(SystemExit):
    suite.main(["--train-shapes", "3b_text"])


def test_medians_are_the_median_of_at_least_five_recorded_repeats(smoke):
  found = list(_timings(smoke))
  # card 1; attention 2 cases x fwd, fwd_bwd; train 2 shapes x 2 frameworks x (1 and k micro-batches);
  # sampler 1 batch x 2 calls x 2
  assert len(found) == 17, [p for p, _ in found]
  for path, t in found:
    assert len(t["times_s"]) == t["repeats"] >= 5, path
    assert t["median_s"] == statistics.median(t["times_s"]), path
    assert t["first_call_s"] > 0 and all(x > 0 for x in t["times_s"]), path


def test_mfu_is_model_flops_over_median_time_over_peak(smoke):
  plan, recipe = smoke["meta"]["plan"], smoke["meta"]["recipe"]
  for name in ("train_jax", "train_torch"):
    peak = smoke[name]["peak"]["peak_flops"]
    assert peak and peak == smoke["card"]["peak"]["peak_flops"]
    for shape, e in smoke[name]["shapes"].items():
      median = statistics.median(e["timing"]["times_s"])
      assert e["mfu"] == pytest.approx(e["flops"]["total"] / median / peak, rel=1e-12), (name, shape)
      acc, k = e["accumulating"], plan["train"]["micro_batches"]
      assert acc["micro_batches"] == k == 2 and acc["flops"]["total"] == k * e["flops"]["total"]
      assert acc["mfu"] == pytest.approx(k * e["flops"]["total"] / statistics.median(acc["timing"]["times_s"])
                                         / peak, rel=1e-12), (name, shape)
      # the FLOPs themselves, from the recorded shape: decoder + head on the response + attention (+ vision)
      spec = plan["train"]["models"][shape.rsplit("_", 1)[0]]
      cfg = suite.model_config(spec, recipe, layers=e["layers"])
      t, rows, seq = cfg.text, e["rows"], e["seq"]
      decoder = suite.param_counts(cfg)["text_layer"] - 2 * t.hidden_size \
          - (t.num_attention_heads + 2 * t.num_key_value_heads) * t.head_dim        # less norms and biases
      text = 6 * (t.num_hidden_layers * decoder * rows * seq + t.vocab_size * t.hidden_size * rows * e["response"]) \
          + 12 * t.num_hidden_layers * t.hidden_size * seq * rows * seq
      vision = rows * suite.vision_train_flops(cfg.vision, e["screenshot_grid"]) if e["screenshot_grid"] else 0
      assert e["flops"]["total"] == pytest.approx(text + vision, rel=1e-12), (name, shape)
      assert e["batch_shape"] == [rows, seq]


def test_both_frameworks_train_the_same_shapes(smoke):
  jax_shapes, torch_shapes = smoke["train_jax"]["shapes"], smoke["train_torch"]["shapes"]
  for name, e in jax_shapes.items():
    for key in ("layers", "hidden", "rows", "seq", "response", "screenshot_grid", "flops", "params"):
      assert torch_shapes[name][key] == e[key], (name, key)
  shot = jax_shapes["7b_width_screenshot"]
  fit = shot["layers_fit"]
  assert fit["memory_bytes"] is None and fit["layers"] == fit["max_layers"] == shot["layers"]   # CPU: no limit
  assert torch_shapes["7b_width_screenshot"]["layers_source"].startswith("train_jax")
  assert jax_shapes["7b_width_screenshot"]["screenshot_grid"] == [1, 8, 4]     # 56 x 112 px smoke screenshot


def test_decode_bound_fraction_is_bytes_over_bandwidth_over_step_time(smoke):
  plan, recipe = smoke["meta"]["plan"], smoke["meta"]["recipe"]
  p = plan["sampler"]
  cfg = suite.model_config(p["model"], recipe)
  t = cfg.text
  bandwidth = smoke["card"]["hbm_copy"]["measured_bytes_per_s"]
  for name in ("sampler_jax", "sampler_torch"):
    for b, e in smoke[name]["batches"].items():
      b = int(b)
      decode = [g - f for g, f in zip(e["generate"]["times_s"], e["prefill"]["times_s"])]
      assert e["decode_times_s"] == pytest.approx(decode) and e["decode_median_s"] == statistics.median(decode)
      kv = 2 * t.num_hidden_layers * b * (p["prompt"] + p["new_tokens"]) * t.num_key_value_heads * t.head_dim * 2
      assert e["bytes_per_decode_step"]["kv_cache"] == kv                    # bf16 cache, the recipe's dtype
      assert e["hbm_bytes_per_s"] == bandwidth
      assert e["prefill_tokens_per_s"] == pytest.approx(b * p["prompt"] / e["prefill"]["median_s"], rel=1e-12)
      # the smoke model decodes within CPU timing noise: a median decode time <= 0 gives no rate (exact values
      # for both cases: test_decode_figures_from_given_timings)
      if e["decode_median_s"] > 0:
        step = e["decode_median_s"] / (p["new_tokens"] - 1)
        assert e["fraction_of_bound"] == pytest.approx(e["bytes_per_decode_step"]["total"] / bandwidth / step,
                                                       rel=1e-12)
        assert e["decode_tokens_per_s"] == pytest.approx(b * (p["new_tokens"] - 1) / e["decode_median_s"], rel=1e-12)
      else:
        assert e["fraction_of_bound"] is None and e["decode_tokens_per_s"] is None
  assert smoke["sampler_jax"]["kv_cache_dtype"] == recipe["kv_cache_dtype"] == "bfloat16"


def test_decode_figures_from_given_timings():
  """Decode = generate − prefill per repeat; the bound = (weights + KV cache) bytes / bandwidth per step; a
  median decode time at or below zero (timing noise) reports no rate instead of a negative one."""
  from benchmarks.model import matmul_params
  from benchmarks.timing import Timing
  recipe = suite.load_recipe()
  cfg = suite.model_config(suite.make_plan(True, recipe, 5, 1)["sampler"]["model"], recipe)
  t = cfg.text
  timing = lambda xs: Timing(first_call_s=None, warmup=0, times_s=list(xs), cpu_times_s=list(xs))
  e = suite.decode_figures(cfg, 4, 16, 9, timing([0.1, 0.1, 0.1]), timing([0.5, 0.9, 0.7]), 1e9, 2, 2)
  kv = 2 * t.num_hidden_layers * 4 * (16 + 9) * t.num_key_value_heads * t.head_dim * 2
  weights = matmul_params(cfg) * 2
  assert e["decode_times_s"] == pytest.approx([0.4, 0.8, 0.6]) and e["decode_median_s"] == pytest.approx(0.6)
  assert e["bytes_per_decode_step"] == {"weights": weights, "kv_cache": kv, "total": weights + kv}
  assert e["measured_step_s"] == pytest.approx(0.6 / 8) and e["bound_step_s"] == pytest.approx((weights + kv) / 1e9)
  assert e["fraction_of_bound"] == pytest.approx((weights + kv) / 1e9 / (0.6 / 8))
  assert e["decode_tokens_per_s"] == pytest.approx(4 * 8 / 0.6) and e["prefill_tokens_per_s"] == pytest.approx(640)
  noisy = suite.decode_figures(cfg, 4, 16, 9, timing([0.2, 0.2, 0.2]), timing([0.1, 0.3, 0.15]), 1e9, 2, 2)
  assert noisy["decode_median_s"] == pytest.approx(-0.05)
  assert noisy["measured_step_s"] is None and noisy["fraction_of_bound"] is None
  assert noisy["decode_tokens_per_s"] is None


def test_copy_bandwidth_counts_bytes_read_and_written(smoke):
  copy = smoke["card"]["hbm_copy"]
  assert copy["bytes_moved_per_call"] == 2 * copy["array_bytes"] == 2 * smoke["meta"]["plan"]["copy_bytes"]
  assert copy["measured_bytes_per_s"] == pytest.approx(copy["bytes_moved_per_call"] / copy["timing"]["median_s"])


def test_cudnn_is_reported_skipped_on_a_cpu(smoke):
  att = smoke["attention"]
  assert att["cudnn"] == suite.CUDNN_SKIP == "skipped: cudnn needs a GPU"
  for case in ("causal", "packed_causal"):
    assert att["cases"][case]["cudnn"] == suite.CUDNN_SKIP and "cudnn_vs_xla" not in att["cases"][case]
    assert att["cases"][case]["xla_bf16_vs_f32_max_abs_diff"] < 5e-2      # bf16 inputs against float32


def test_a_failing_section_records_its_error_and_the_next_still_runs(tmp_path):
  r = _run_suite(tmp_path, "--sections", "card,attention", "--fail", "card", "--isolate", "process", timeout=300)
  assert r["meta"]["isolate"] == "process"
  assert r["card"]["status"] == "error" and "injected failure (--fail card)" in r["card"]["error"]
  assert r["attention"]["status"] == "ok" and r["attention"]["cudnn"] == suite.CUDNN_SKIP
  assert "train_jax" not in r


def test_a_spent_budget_leaves_sections_not_run(tmp_path):
  r = _run_suite(tmp_path, "--sections", "card", "--budget-s", "0.5", timeout=120)
  assert r["card"] == {"status": "not run", "error": "the suite's --budget-s was spent"}


def test_a_train_shape_that_runs_out_of_memory_retries_with_fewer_layers():
  recipe = suite.load_recipe()
  ctx = {"plan": suite.make_plan(True, recipe, 5, 0), "recipe": recipe, "results": {}}
  ctx["plan"]["train"]["models"]["7b_width"]["max_layers"] = 3
  report = suite.Report()
  report["peak"] = {"peak_flops": 1e12}
  calls = []

  def step_fn(cfg, inputs):
    calls.append(cfg.text.num_hidden_layers)
    if len(calls) == 1:
      raise ValueError("boom: not an OOM")
    if cfg.text.num_hidden_layers == 3:
      raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.0GiB")
    from benchmarks.timing import Timing
    return Timing(1.0, 0, [0.5, 0.25, 1.0, 0.75, 2.0], [0.0] * 5), {"loss": 1.0}
  suite.run_train_shapes(ctx, report, step_fn, memory_bytes=None, reuse_layers={})
  text, shot = report["shapes"]["1.5b_text"], report["shapes"]["7b_width_screenshot"]
  assert text["status"] == "error" and text["error"] == "ValueError: boom: not an OOM" and "oom_retry" not in text
  assert calls == [2, 3, 2] and shot["status"] == "ok" and "error" not in shot
  assert shot["oom_retry"]["from_layers"] == 3 and "RESOURCE_EXHAUSTED" in shot["oom_retry"]["error"]
  assert shot["layers"] == 2 and shot["mfu"] == pytest.approx(shot["flops"]["total"] / 0.75 / 1e12)


def test_parameter_counts_match_the_model_and_the_published_sizes():
  import jax
  from flax import nnx

  from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
  recipe = suite.load_recipe()
  smoke_plan, full_plan = suite.make_plan(True, recipe, 5, 0), suite.make_plan(False, recipe, 5, 1)
  for spec in smoke_plan["train"]["models"].values():
    cfg = suite.model_config(spec, recipe, layers=2)
    model = nnx.eval_shape(lambda cfg=cfg: Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0)))
    leaves = jax.tree.leaves(nnx.state(model, nnx.Param))
    assert suite.param_counts(cfg)["total"] == sum(math.prod(x.shape) for x in leaves)
  full = suite.param_counts(suite.model_config(full_plan["train"]["models"]["7b_width"], recipe))
  assert full["total"] == 8_292_166_656                 # Qwen2.5-VL-7B-Instruct
  q15 = suite.param_counts(suite.model_config(full_plan["train"]["models"]["1.5b"], recipe))
  assert q15["text_fixed"] + 28 * q15["text_layer"] == 1_543_714_304   # Qwen2.5-1.5B


def test_layers_that_fit_and_the_full_shapes():
  recipe = suite.load_recipe()
  plan = suite.make_plan(False, recipe, 5, 1)
  cfg = suite.model_config(plan["train"]["models"]["7b_width"], recipe, layers=1)
  _, fit = suite.layers_that_fit(cfg, None, 1, 4096, 28)
  memory = (fit["fixed_bytes"] + 3.5 * fit["per_layer_bytes"]) / suite.MEMORY_HEADROOM
  assert suite.layers_that_fit(cfg, memory, 1, 4096, 28)[0] == 3
  assert suite.layers_that_fit(cfg, 1e9, 1, 4096, 28)[0] == 1 and suite.layers_that_fit(cfg, 1e15, 1, 4096, 28)[0] == 28
  # the recipe's 1092 x 2436 screenshot: 78 x 174 patches = 3393 image tokens in a 4096-token row
  grid = suite.screenshot_grid(*plan["train"]["screen_px"], cfg.vision)
  assert grid == (1, 174, 78)
  rows = suite.token_rows(cfg, 1, 4096, 256, grid)
  ids = rows["prompts"][0]
  assert len(ids) + len(rows["responses"][0]) == 4096 and (ids == cfg.image_token_id).sum() == 3393
  assert plan["sampler"]["batches"] == [1, 16, 64] and plan["train"]["seq"] == 4096


def test_vision_flops_by_hand():
  from gui_jax.models.qwen2_5_vl.config import tiny
  v = tiny().vision                                     # hidden 64, inter 128, depth 4 (block 3 full), window 8 patches
  grid = (1, 12, 20)                                    # merged 6 x 10: windows of 4 x 4, 4 x 2, 2 x 4, 2 x 2 units
  counts = suite.window_patch_counts(grid, v)
  assert sorted(counts) == [16, 32, 32, 32, 64, 64] and sum(counts) == 240
  n, h = 240, 64
  matmul = 6 * (n * (v.patch_dim * h + 4 * (4 * h * h + 3 * h * 128)) + n / 4 * (256 * 256 + 256 * 128))
  attention = 12 * h * (3 * (2 * 64 ** 2 + 3 * 32 ** 2 + 16 ** 2) + 240 ** 2)
  assert suite.vision_train_flops(v, grid) == pytest.approx(matmul + attention, rel=1e-12)


def test_peak_table_and_unknown_cards():
  assert suite.peak_info("NVIDIA H100 80GB HBM3", "gpu")["peak_flops"] == 989e12
  assert suite.peak_info("NVIDIA H100 80GB HBM3", "gpu")["hbm_bytes_per_s"] == 3.35e12
  assert suite.peak_info("NVIDIA H200", "gpu")["hbm_bytes_per_s"] == 4.8e12
  assert suite.peak_info("NVIDIA H100 PCIe", "gpu")["peak_flops"] is None      # another board: no MFU
  assert suite.run_section("card", {}, {"card"})["error"] == "InjectedFailure: injected failure (--fail card)"


def test_the_suite_imports_without_grain_or_ml_collections():
  code = ("import sys\n"
          "class Block:\n"
          "  def find_spec(self, name, path=None, target=None):\n"
          "    if name.split('.')[0] in ('grain', 'ml_collections'):\n"
          "      raise ImportError('blocked ' + name)\n"
          "sys.meta_path.insert(0, Block())\n"
          "import benchmarks.gpu_suite, benchmarks.gpu_suite_jax, benchmarks.gpu_suite_torch\n"
          "import gui_jax.train.rl_common, gui_jax.train.state, gui_jax.rl.batch, gui_jax.models.sampler\n")
  proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS="cpu"),
                        capture_output=True, text=True, timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
