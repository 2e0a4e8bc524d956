"""Unit tests run against a real kubox-agent process on 127.0.0.1 (no cluster): the binary from
$KUBOX_AGENT_BIN, or built from the repository with `go build`."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def agent_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The kubox-agent binary."""
    path = os.environ.get("KUBOX_AGENT_BIN")
    if path:
        return path
    out = tmp_path_factory.mktemp("bin") / "kubox-agent"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/kubox-agent"], cwd=REPO, check=True)
    return str(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalAgent:
    """A kubox-agent process serving a temporary root on 127.0.0.1."""

    def __init__(self, binary: str, root: Path) -> None:
        self.token = secrets.token_hex(32)
        self.root = root
        tok = root.parent / "token"
        tok.write_text(self.token)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), "--compat-port", "0",
             "--token-file", str(tok), "--root", str(root), "--shutdown-grace", "1s"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"kubox-agent did not start: {self.proc.stderr.read().decode()}")
                time.sleep(0.02)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def agent(agent_bin: str, tmp_path: Path) -> Iterator[LocalAgent]:
    """A fresh agent for one test; stopped (by its PID) when the test ends."""
    root = tmp_path / "root"
    root.mkdir()
    a = LocalAgent(agent_bin, root)
    yield a
    a.stop()


@pytest.fixture
def barrier():
    """barrier(directory, i, n): a shell command that finishes only once n commands like it run
    at the same time (each touches a file in directory and waits for n files), for proving that
    calls overlap without measuring time."""

    def command(directory: Path, i: int, n: int) -> str:
        return f"touch {directory}/{i}; while [ $(ls {directory} | wc -l) -lt {n} ]; do sleep 0.02; done; echo {i}"

    return command
