"""The package installs offline, as the README says, and works from the installed copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SDK = Path(__file__).resolve().parents[2]


def test_installs_offline_into_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    src = tmp_path / "sdk"
    shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", str(src)],
                   check=True, env=env, cwd=tmp_path)
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import kubox, kubox.aio; print(kubox.__file__); print(kubox.Sandbox.claim.__doc__ is not None)"],
                         check=True, env=env, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(venv)) and out[1] == "True"
    typed = list(venv.glob("lib/python*/site-packages/kubox/py.typed"))
    assert typed, "py.typed is not installed: type checkers would ignore the hints"
