"""Logical-axis sharding: rules -> PartitionSpecs, and a train step on an 8-device mesh equals the 1-device step.

The mesh test runs `python tests/models/test_sharding.py` in a subprocess with 8 fake CPU devices.
"""
import os
import subprocess
import sys

import pytest
from jax.sharding import PartitionSpec as P

from gui_jax.models import sharding as S

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _FakeMesh:
  """Only `.shape` is read by logical_to_spec."""

  def __init__(self, **shape):
    self.shape = shape


def test_logical_to_spec_rules():
  mesh = _FakeMesh(data=2, fsdp=4, tensor=2)
  assert S.logical_to_spec(("embed", "mlp"), mesh=mesh, shape=(128, 384)) == P("fsdp", "tensor")
  assert S.logical_to_spec(("vocab", "embed"), mesh=mesh, shape=(4096, 128)) == P("tensor", "fsdp")
  # batch -> (data, fsdp); the second dimension may not reuse fsdp.
  assert S.logical_to_spec(("batch", "embed"), mesh=mesh, shape=(16, 128)) == P(("data", "fsdp"), None)
  # Not divisible: 6 rows over data*fsdp = 8 -> keep the prefix that divides (data = 2).
  assert S.logical_to_spec(("batch", None), mesh=mesh, shape=(6, 3)) == P("data", None)
  # kv heads 1 * head_dim 30 over tensor=2 would not divide -> replicated.
  assert S.logical_to_spec(("embed", "kv_heads"), mesh=mesh, shape=(128, 45)) == P("fsdp", None)
  # Size-1 mesh axes are dropped; custom rules win.
  assert S.logical_to_spec(("embed", "mlp"), mesh=_FakeMesh(data=1, fsdp=1, tensor=8),
                           shape=(64, 64)) == P(None, "tensor")
  assert S.logical_to_spec(("embed",), {"embed": "tensor"}, _FakeMesh(data=1, fsdp=1, tensor=2), (8,)) == P("tensor")
  with pytest.raises(KeyError, match="'embedd' has no sharding rule"):
    S.logical_to_spec(("embedd",))


def test_make_mesh_validates_sizes():
  with pytest.raises(ValueError, match="data\\*fsdp\\*tensor = 6"):
    S.make_mesh(data=2, fsdp=3, tensor=1)
  mesh = S.make_mesh()
  assert mesh.axis_names == ("data", "fsdp", "tensor")


def test_sharded_train_step_matches_single_device():
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, timeout=300, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
  assert "SHARDING-OK" in proc.stdout, proc.stdout[-3000:]


def _worker() -> None:
  sys.path.insert(0, TESTS_DIR)
  import jax
  import numpy as np
  from flax import nnx
  from support.tiny_train import (
    BATCH_LOGICAL_AXES,
    build_tiny_model,
    make_batch,
    make_optimizer,
    train_step,
  )

  jax.config.update("jax_default_matmul_precision", "highest")
  assert jax.device_count() == 8, jax.devices()
  batch = make_batch(batch=4, length=12, seed=0)

  # Reference: one device, nothing sharded.
  ref_model = build_tiny_model(seed=0)
  ref_opt = make_optimizer(ref_model)
  with jax.default_device(jax.devices()[0]):
    ref = [train_step(ref_model, ref_opt, batch) for _ in range(2)]
  ref_losses, ref_grads = [float(r[0]) for r in ref], ref[0][1]

  mesh = S.make_mesh(data=1, fsdp=4, tensor=2)
  model = build_tiny_model(seed=0)
  opt = make_optimizer(model)
  S.shard_model(model, mesh)
  S.shard_model(opt, mesh)  # nnx.Optimizer holds only the optimizer state
  # The layout is really sharded: the MLP up projection is split 4 x 2, an Adam moment like its weight.
  up = model.language_model.layers[0].mlp.up_proj.kernel[...]
  assert up.sharding.spec == P("fsdp", "tensor"), up.sharding
  assert len({tuple((s.start, s.stop) for s in sh.index) for sh in up.addressable_shards}) == 8
  mu = jax.tree.leaves(nnx.state(opt, nnx.OptState))
  assert any(getattr(x, "sharding", None) is not None and x.sharding.spec == P("fsdp", "tensor") for x in mu)
  sbatch = S.shard_batch(batch, mesh, logical_axes=BATCH_LOGICAL_AXES)
  assert sbatch["input_ids"].sharding.spec == P("fsdp", None)
  steps = [train_step(model, opt, sbatch) for _ in range(2)]
  losses, grads = [float(r[0]) for r in steps], steps[0][1]
  grad_diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                  for a, b in zip(jax.tree.leaves(ref_grads), jax.tree.leaves(grads)))
  assert grad_diff <= 1e-5, f"gradients differ by {grad_diff}"

  np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-5)
  ref_params = nnx.to_flat_state(nnx.state(ref_model, nnx.Param))
  got_params = dict(nnx.to_flat_state(nnx.state(model, nnx.Param)))
  worst = 0.0
  for path, var in ref_params:
    a, b = np.asarray(var.get_value()), np.asarray(got_params[path].get_value())
    worst = max(worst, float(np.max(np.abs(a - b))))
  assert worst <= 1e-5, f"params differ after 2 steps by {worst}"
  print("losses", ref_losses, losses, "max grad diff", grad_diff, "max param diff", worst)
  print("SHARDING-OK")


if __name__ == "__main__":
  _worker()


def test_mesh_from_config_rule_tables_and_single_process_distributed(monkeypatch):
  from gui_jax.train.config_blocks import mesh_block
  cfg = mesh_block()
  mesh = S.mesh_from_config(cfg)
  assert mesh.axis_names == ("data", "fsdp", "tensor") and mesh.devices.size == len(S.jax.devices())
  assert dict(S.mesh_from_config(cfg, role="sampler").shape) == dict(mesh.shape)  # sampler sizes 0 = same
  with pytest.raises(ValueError, match="unknown mesh role"):
    S.mesh_from_config(cfg, role="critic")
  fsdp = S.rules_by_name("fsdp")
  assert S.logical_to_spec(("embed", "mlp"), fsdp, _FakeMesh(data=1, fsdp=4, tensor=2), (128, 384)) == P("fsdp", None)
  with pytest.raises(ValueError, match="unknown logical rule table 'tp'"):
    S.rules_by_name("tp")
  for var in ("JAX_NUM_PROCESSES", "TPU_WORKER_HOSTNAMES", "SLURM_NTASKS"):
    monkeypatch.delenv(var, raising=False)
  assert S.maybe_init_distributed("auto") is False  # one process: nothing to join
  assert S.maybe_init_distributed("off") is False
  with pytest.raises(ValueError, match="mesh.distributed must be"):
    S.maybe_init_distributed("yes")
