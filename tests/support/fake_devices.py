"""Runs a test file's `_worker()` in a subprocess on N fake CPU devices (the XLA flag must be set before JAX
initialises) and returns the JSON it prints on its last `RESULT ` line."""
import json
import os
import subprocess
import sys


def run_worker(path: str, devices: int = 8, timeout: int = 1200) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, proc.stdout[-3000:]
    return json.loads(line[-1][len("RESULT "):])
