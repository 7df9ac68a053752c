"""Two local processes joined by jax.distributed (gloo) run one sharded train step and agree on the loss.

The test spawns `python tests/models/test_distributed.py <coordinator> <num_processes> <process_id> <devices>`.
"""
import os
import socket
import subprocess
import sys

import pytest

WORKER_TIMEOUT_S = 150


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _run_pair(devices_per_process: int) -> list[str]:
  coord = f"127.0.0.1:{_free_port()}"
  env = dict(os.environ)
  env.pop("XLA_FLAGS", None)
  env["JAX_PLATFORMS"] = "cpu"
  procs = [subprocess.Popen([sys.executable, __file__, coord, "2", str(pid), str(devices_per_process)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
           for pid in range(2)]
  outs = []
  try:
    for p in procs:
      out, _ = p.communicate(timeout=WORKER_TIMEOUT_S)
      outs.append(out)
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for pid, (p, out) in enumerate(zip(procs, outs)):
    assert p.returncode == 0, f"process {pid} failed (rc={p.returncode}):\n{out[-4000:]}"
  return outs


def _losses(out: str) -> list[float]:
  return [float(line.split()[1]) for line in out.splitlines() if line.startswith("LOSS ")]


@pytest.mark.parametrize("devices_per_process", [2])
def test_two_processes_agree_on_sharded_step(devices_per_process):
  outs = _run_pair(devices_per_process)
  l0, l1 = _losses(outs[0]), _losses(outs[1])
  assert len(l0) == 2 and l0 == l1, (outs[0][-2000:], outs[1][-2000:])
  assert l0[1] < l0[0]  # the update step changed the weights (same step on both processes)
  # (Sharded == single-device numerics is checked in test_sharding.py; here: the processes agree.)


# ------------------------------------------------------------------------------------------------ worker
def _worker(coord: str, num_processes: int, process_id: int, devices: int) -> None:
  import jax

  jax.config.update("jax_num_cpu_devices", devices)
  from gui_jax.models import sharding as S

  S.init_distributed(coord, num_processes, process_id, timeout_s=60)
  import numpy as np
  from support.tiny_train import (
    BATCH_LOGICAL_AXES,
    build_tiny_model,
    make_batch,
    make_optimizer,
    train_step,
  )

  jax.config.update("jax_default_matmul_precision", "highest")
  assert jax.process_count() == num_processes and jax.device_count() == num_processes * devices
  batch = make_batch(batch=4, length=12, seed=0)

  # fsdp spans the processes, tensor within each process.
  mesh = S.make_mesh(data=1, fsdp=-1, tensor=devices)
  model = build_tiny_model(seed=0)
  opt = make_optimizer(model)
  S.shard_model(model, mesh)
  S.shard_model(opt, mesh)
  sbatch = S.shard_batch(batch, mesh, logical_axes=BATCH_LOGICAL_AXES)
  for _ in range(2):
    loss, _ = train_step(model, opt, sbatch)
    print("LOSS", repr(float(np.asarray(loss.addressable_data(0)))), flush=True)
  jax.distributed.shutdown()


if __name__ == "__main__":
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ (for support/)
  _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
