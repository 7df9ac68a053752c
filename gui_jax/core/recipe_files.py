"""Loading recipe files (configs/*.py, sweep files): the one place a Python file is imported by path.

    load_python_file("configs/quickstart.py")        -> the module
    recipe_config("configs/quickstart.py[:arg]")     -> its get_config() (get_config(arg) with ':arg')
"""
from __future__ import annotations

import importlib.util
import os
from types import ModuleType


def load_python_file(path: str) -> ModuleType:
  """The module defined by the Python file at `path` (a fresh module each call, named after the path);
  FileNotFoundError names the path when it is missing."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"recipe file not found: {path}")
  name = f"_recipe_{abs(hash(os.path.abspath(path)))}"
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def recipe_config(spec: str):
  """get_config() of 'path/to/recipe.py', or get_config(arg) of 'path/to/recipe.py:arg'."""
  path, sep, arg = spec.partition(":")
  module = load_python_file(path)
  if not hasattr(module, "get_config"):
    raise AttributeError(f"{path} defines no get_config()")
  return module.get_config(arg) if sep else module.get_config()
