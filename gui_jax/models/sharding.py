"""Device mesh, logical axis rules, and sharding of NNX models and activations.

Every weight carries logical axis names in its `out_sharding` metadata (see qwen2_5_vl/layers.py). A rules table
maps each logical name to mesh axes; changing the mesh shape or the table changes the parallelism, nothing else:

  mesh = make_mesh(data=1, fsdp=4, tensor=2)
  shard_model(model, mesh); shard_model(opt, mesh)   # weights, then nnx.Optimizer state (moments follow weights)
  batch = shard_batch(batch, mesh)               # [B, L, ...] inputs split over ('data', 'fsdp')
  with activation_sharding(mesh):                # optional: `constrain(x, ('batch', 'length', 'act_embed'))`
    ...                                          #   in jitted model code becomes a with_sharding_constraint

A logical axis whose dimension does not divide evenly over its mesh axes is replicated instead (tiny configs,
GQA kv heads fewer than the tensor axis), and one mesh axis shards at most one dimension of an array.
Multi-host: call `init_distributed(...)` first; `make_mesh` then spans every process's devices.
"""
from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

MESH_AXES: tuple[str, str, str] = ("data", "fsdp", "tensor")

# logical name -> mesh axis, tuple of mesh axes, or None (replicated). First match wins (MaxText style).
MeshAxes = str | tuple[str, ...] | None
LogicalRules = tuple[tuple[str, MeshAxes], ...]

DEFAULT_RULES: LogicalRules = (
    # activations
    ("batch", ("data", "fsdp")),
    ("length", None),
    ("kv_length", None),
    ("act_embed", None),
    ("act_mlp", "tensor"),
    ("act_heads", "tensor"),
    ("act_kv_heads", "tensor"),
    ("act_vocab", "tensor"),
    # weights (text)
    ("embed", "fsdp"),
    ("mlp", "tensor"),
    ("heads", "tensor"),
    ("q_heads", "tensor"),
    ("kv_heads", "tensor"),
    ("kv", "tensor"),
    ("head_dim", None),
    ("vocab", "tensor"),
    ("norm", None),
    ("layers", None),
    # weights (vision tower)
    ("vision_embed", "fsdp"),
    ("vision_mlp", "tensor"),
    ("vision_heads", "tensor"),
    ("vision_qkv", "tensor"),
    ("vision_patch", None),
    ("vision_merge", "fsdp"),
    ("patch", None),
)


# Pure FSDP: every weight sharded on its model (embed) dimension only; tensor-parallel names replicated.
FSDP_RULES: LogicalRules = tuple((name, None if axes == "tensor" else axes) for name, axes in DEFAULT_RULES)

RULE_TABLES: dict[str, LogicalRules] = {"default": DEFAULT_RULES, "fsdp": FSDP_RULES}


def rules_by_name(name: str) -> LogicalRules:
  if name not in RULE_TABLES:
    raise ValueError(f"unknown logical rule table {name!r}; known: {sorted(RULE_TABLES)}")
  return RULE_TABLES[name]


# ---------------------------------------------------------------------------------------------- mesh & processes
def make_mesh(data: int = 1, fsdp: int = -1, tensor: int = 1, devices: Sequence[Any] | None = None) -> Mesh:
  """A ('data', 'fsdp', 'tensor') mesh over `devices` (default: all devices of all processes).

  One of the sizes may be -1: it takes whatever the device count leaves (default fsdp=-1, i.e. pure FSDP).
  """
  devs = list(jax.devices() if devices is None else devices)
  sizes = [data, fsdp, tensor]
  if sizes.count(-1) > 1:
    raise ValueError(f"make_mesh: at most one of data/fsdp/tensor may be -1, got {sizes}")
  if -1 in sizes:
    known = math.prod(s for s in sizes if s != -1)
    if known <= 0 or len(devs) % known:
      raise ValueError(f"make_mesh: {len(devs)} devices not divisible by the fixed axes {sizes}")
    sizes[sizes.index(-1)] = len(devs) // known
  if any(s < 1 for s in sizes):
    raise ValueError(f"make_mesh: axis sizes must be >= 1, got data={sizes[0]} fsdp={sizes[1]} tensor={sizes[2]}")
  if math.prod(sizes) != len(devs):
    raise ValueError(f"make_mesh: data*fsdp*tensor = {math.prod(sizes)} but {len(devs)} devices are available")
  if devices is None:
    # Topology-aware device order (ICI rings on TPU) when the mesh spans all devices.
    return jax.make_mesh(tuple(sizes), MESH_AXES, axis_types=(jax.sharding.AxisType.Auto,) * 3)
  return Mesh(np.asarray(devs, dtype=object).reshape(sizes), MESH_AXES)


def mesh_from_config(mesh_cfg, devices: Sequence[Any] | None = None, role: str = "train") -> Mesh:
  """The mesh of one role from the config's `mesh` block (see train/config_blocks.mesh_block).

  role 'train': (data, fsdp, tensor). role 'sampler': (sampler_data, sampler_fsdp, sampler_tensor) over the
  same devices (a differently shaped mesh: e.g. tensor-parallel replicas for decoding); all three 0 = the
  training mesh's shape.
  """
  if role == "train":
    sizes = (mesh_cfg.data, mesh_cfg.fsdp, mesh_cfg.tensor)
  elif role == "sampler":
    sizes = (mesh_cfg.get("sampler_data", 0), mesh_cfg.get("sampler_fsdp", 0), mesh_cfg.get("sampler_tensor", 0))
    if not any(sizes):
      sizes = (mesh_cfg.data, mesh_cfg.fsdp, mesh_cfg.tensor)
  else:
    raise ValueError(f"unknown mesh role {role!r}: use 'train' or 'sampler'")
  data, fsdp, tensor = (int(s) for s in sizes)
  return make_mesh(data=data, fsdp=fsdp, tensor=tensor, devices=devices)


def maybe_init_distributed(mode: str = "auto") -> bool:
  """Initialises `jax.distributed` for a multi-host run; returns True when it did.

  mode 'on': always (JAX auto-detects TPU pods / SLURM / the JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES,
  JAX_PROCESS_ID variables); 'off': never; 'auto': only when the environment names more than one process
  (JAX_NUM_PROCESSES > 1, several TPU_WORKER_HOSTNAMES, or SLURM_NTASKS > 1). A single process is a no-op.
  """
  import os
  if mode not in ("auto", "on", "off"):
    raise ValueError(f"mesh.distributed must be 'auto', 'on' or 'off', got {mode!r}")
  if mode == "off":
    return False
  if mode == "auto":
    env = os.environ
    hosts = [h for h in env.get("TPU_WORKER_HOSTNAMES", "").split(",") if h.strip()]
    multi = (int(env.get("JAX_NUM_PROCESSES", "1") or 1) > 1 or len(hosts) > 1
             or int(env.get("SLURM_NTASKS", "1") or 1) > 1)
    if not multi:
      return False
  if jax.distributed.is_initialized():
    return False
  env = os.environ
  num = env.get("JAX_NUM_PROCESSES")
  pid = env.get("JAX_PROCESS_ID")
  init_distributed(env.get("JAX_COORDINATOR_ADDRESS"), int(num) if num else None, int(pid) if pid else None)
  return True


def init_distributed(coordinator: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None,
                     cpu_collectives: str = "gloo", timeout_s: int = 300) -> None:
  """Joins a multi-process JAX run (`jax.distributed.initialize`); call before any other JAX use.

  coordinator "host:port" of process 0. With all arguments None, JAX auto-detects the cluster (TPU pods, SLURM).
  On CPU, cross-process collectives need an implementation: gloo (the default here) or mpi.
  """
  if jax.config.jax_platforms in (None, "", "cpu") or "cpu" in str(jax.config.jax_platforms):
    jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
  jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id,
                             local_device_ids=local_device_ids, initialization_timeout=timeout_s)


# ---------------------------------------------------------------------------------------------- logical -> mesh
def _rules_dict(rules: LogicalRules | Mapping[str, MeshAxes]) -> dict[str, MeshAxes]:
  if isinstance(rules, Mapping):
    return dict(rules)
  out: dict[str, MeshAxes] = {}
  for name, axes in rules:
    out.setdefault(name, axes)  # first match wins
  return out


def logical_to_spec(logical_axes: Iterable[str | None], rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES,
                    mesh: Mesh | None = None, shape: Sequence[int] | None = None) -> PartitionSpec:
  """PartitionSpec for an array whose dimensions have these logical names.

  Unknown names raise (a typo would silently replicate a 70B weight). With `mesh` and `shape`, a dimension that
  does not divide by its mesh axes' total size is replicated; mesh axes of size 1 are dropped; a mesh axis
  already used by an earlier dimension is not reused.
  """
  table = _rules_dict(rules)
  logical_axes = tuple(logical_axes)
  if shape is not None and len(shape) != len(logical_axes):
    raise ValueError(f"logical axes {logical_axes} do not match shape {tuple(shape)}")
  used: set[str] = set()
  spec: list[MeshAxes] = []
  for i, name in enumerate(logical_axes):
    if name is None:
      spec.append(None)
      continue
    if name not in table:
      raise KeyError(f"logical axis {name!r} has no sharding rule; known: {sorted(table)}")
    target = table[name]
    axes = () if target is None else ((target,) if isinstance(target, str) else tuple(target))
    axes = tuple(a for a in axes if a not in used)
    if mesh is not None:
      for a in axes:
        if a not in mesh.shape:
          raise ValueError(f"rule {name!r} -> {target!r} names mesh axis {a!r} absent from mesh {dict(mesh.shape)}")
      axes = tuple(a for a in axes if mesh.shape[a] > 1)
      if shape is not None:
        # Keep the longest prefix of mesh axes that divides the dimension.
        while axes and shape[i] % math.prod(mesh.shape[a] for a in axes):
          axes = axes[:-1]
    used.update(axes)
    spec.append(None if not axes else (axes[0] if len(axes) == 1 else axes))
  return PartitionSpec(*spec)


def _var_logical_axes(var: nnx.Variable) -> tuple[str | None, ...] | None:
  meta = var.get_metadata()
  for key in ("out_sharding", "sharding", "sharding_names"):
    axes = meta.get(key)
    if axes:
      return tuple(axes)
  return None


def state_shardings(tree: Any, mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES) -> Any:
  """NamedSharding for every array in an nnx.State / module / pytree, from the Variables' logical axes.

  Arrays without logical axes (RNG keys, counters, scalars) are replicated. Returns the same tree structure with
  each Variable's value replaced by its NamedSharding.
  """
  def one(x):
    if isinstance(x, nnx.Variable):
      value = x.get_value()
      axes = _var_logical_axes(x)
      shape = getattr(value, "shape", None)
      if axes is None or shape is None:
        spec = PartitionSpec()
      else:
        spec = logical_to_spec(axes, rules, mesh, shape)
      return x.replace(NamedSharding(mesh, spec))
    return NamedSharding(mesh, PartitionSpec())

  if isinstance(tree, nnx.Pytree):
    tree = nnx.state(tree)
  return jax.tree.map(one, tree, is_leaf=lambda x: isinstance(x, nnx.Variable))


def shard_model(model: Any, mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES) -> Any:
  """Moves every array of an NNX object (model, nnx.Optimizer, ValueModel, ...) onto `mesh`, in place.

  Optimizer state variables inherit their parameter's logical axes, so Adam moments are sharded like the weights.
  (An nnx.Optimizer does not hold its model in flax >= 0.11: shard both.) Returns the object for chaining.
  """
  state = nnx.state(model)
  shardings = state_shardings(state, mesh, rules)
  nnx.update(model, _device_put_tree(state, shardings))
  return model


def _device_put_tree(state: Any, shardings: Any) -> Any:
  if jax.process_count() == 1:
    return jax.device_put(state, shardings)
  # Multi-process: every process holds the same full host value (same seed); build the global array from it.
  def put(x, s):
    x = np.asarray(jax.device_get(x)) if not isinstance(x, np.ndarray) else x
    return jax.make_array_from_callback(x.shape, s, lambda idx: x[idx])
  return jax.tree.map(put, state, shardings)


def replicate(tree: Any, mesh: Mesh) -> Any:
  """Every array of a pytree replicated on the mesh."""
  return jax.tree.map(lambda _: NamedSharding(mesh, PartitionSpec()), tree)


def shard_batch(batch: Any, mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES,
                logical_axes: Mapping[str, Sequence[str | None] | None] | None = None) -> Any:
  """Places host arrays (numpy / jax) on the mesh: dimension 0 split over the 'batch' rule, the rest replicated.

  logical_axes: per top-level key of a dict batch, the logical names of that array's dimensions, overriding the
  batch-first default, e.g. {'position_ids': (None, 'batch', None), 'pixel_values': None} (None = replicated).
  Multi-process: every process passes the same global batch (e.g. from a seeded loader) and keeps the shards
  that live on its devices. Rank-0 arrays are replicated.
  """
  overrides = dict(logical_axes or {})
  if overrides and not isinstance(batch, Mapping):
    raise ValueError("shard_batch: logical_axes overrides need a dict batch")
  unknown = sorted(set(overrides) - set(batch)) if overrides else []
  if unknown:
    raise KeyError(f"shard_batch: logical_axes names keys absent from the batch: {unknown}")

  def put(x, axes):
    x = np.asarray(x) if not isinstance(x, jax.Array) else x
    if axes == "default":
      axes = ("batch",) + (None,) * (x.ndim - 1) if x.ndim else ()
    spec = PartitionSpec() if not axes else logical_to_spec(axes, rules, mesh, x.shape)
    sharding = NamedSharding(mesh, spec)
    if jax.process_count() == 1:
      return jax.device_put(x, sharding)
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])

  def put_tree(tree, axes):
    return jax.tree.map(lambda x: put(x, axes), tree)

  if isinstance(batch, Mapping):
    return type(batch)({k: put_tree(v, overrides.get(k, "default")) for k, v in batch.items()})
  return jax.tree.map(lambda x: put(x, "default"), batch)


def loader_shardings(mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES):
  """The `shardings(path, logical_axes, shape)` callable of `hf_io.load_hf_checkpoint`: each tensor is placed
  on the mesh as it is read, so a large checkpoint never sits whole on one device."""
  def place(path: str, logical_axes, shape) -> NamedSharding:
    del path
    spec = logical_to_spec(logical_axes, rules, mesh, shape) if logical_axes else PartitionSpec()
    return NamedSharding(mesh, spec)
  return place


# ---------------------------------------------------------------------------------------------- activations
class _ActivationContext(threading.local):
  mesh: Mesh | None = None
  rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES


_ACTIVATIONS = _ActivationContext()


@contextlib.contextmanager
def activation_sharding(mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES):
  """Within this context (active while tracing), `constrain` pins activations to the mesh."""
  old = (_ACTIVATIONS.mesh, _ACTIVATIONS.rules)
  _ACTIVATIONS.mesh, _ACTIVATIONS.rules = mesh, rules
  try:
    yield
  finally:
    _ACTIVATIONS.mesh, _ACTIVATIONS.rules = old


def current_mesh() -> Mesh | None:
  """The mesh of the enclosing `activation_sharding` context (None outside: single device / unsharded)."""
  return _ACTIVATIONS.mesh


def current_rules() -> LogicalRules | Mapping[str, MeshAxes]:
  return _ACTIVATIONS.rules


def constrain(x: jax.Array, logical_axes: Sequence[str | None]) -> jax.Array:
  """with_sharding_constraint by logical names; a no-op outside `activation_sharding` (single device)."""
  mesh = _ACTIVATIONS.mesh
  if mesh is None:
    return x
  spec = logical_to_spec(logical_axes, _ACTIVATIONS.rules, mesh, x.shape)
  return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))


def describe(model: Any, mesh: Mesh, rules: LogicalRules | Mapping[str, MeshAxes] = DEFAULT_RULES) -> str:
  """One line per weight: path, shape, logical axes, PartitionSpec (for logs and debugging a layout)."""
  lines = []
  state = nnx.state(model)
  for path, var in nnx.to_flat_state(state):
    value = var.get_value()
    axes = _var_logical_axes(var)
    spec = logical_to_spec(axes, rules, mesh, value.shape) if axes else PartitionSpec()
    lines.append(f"{'/'.join(map(str, path))}: {tuple(value.shape)} {axes} -> {spec}")
  return "\n".join(lines)
