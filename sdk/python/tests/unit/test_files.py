"""Files through a real kubox-agent: contents (bytes, text, streamed), metadata, watch."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

import kubox
from kubox import Sandbox


@pytest.fixture
def sb(agent):
    s = Sandbox.attach(agent.url, agent.token, name="local")
    yield s
    s.close()


def test_write_read_bytes_and_text(sb, agent):
    sb.files.write("/work/a.txt", "héllo\n")
    sb.files.write("/work/b.bin", b"\x00\xff")
    assert sb.files.read_text("/work/a.txt") == "héllo\n"
    assert sb.files.read("/work/b.bin") == b"\x00\xff"
    # The agent wrote into its root: the bytes are really there.
    assert (agent.root / "work" / "b.bin").read_bytes() == b"\x00\xff"


def test_mode(sb, agent):
    sb.files.write("/run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert sb.files.stat("/run.sh").mode == 0o755
    assert os.stat(agent.root / "run.sh").st_mode & 0o777 == 0o755


def test_large_file_streams_both_ways(sb, tmp_path):
    size = 48 << 20
    src = tmp_path / "big"
    with open(src, "wb") as f:
        for i in range(size >> 20):
            f.write(hashlib.sha256(str(i).encode()).digest() * (1 << 15))
    sb.files.upload(src, "/big")
    assert sb.files.stat("/big").size == size
    dst = tmp_path / "back"
    assert sb.files.download("/big", dst) == size
    assert hashlib.sha256(dst.read_bytes()).digest() == hashlib.sha256(src.read_bytes()).digest()
    chunks = list(sb.files.stream("/big"))
    assert len(chunks) > 1 and sum(map(len, chunks)) == size


def test_write_from_file_object_and_iterable(sb):
    sb.files.write("/f1", io.BytesIO(b"from a file object"))
    sb.files.write("/f2", (bytes([c]) * 3 for c in b"ab"))
    assert sb.files.read("/f1") == b"from a file object"
    assert sb.files.read("/f2") == b"aaabbb"


def test_list_stat_exists_move_remove(sb):
    sb.files.make_dir("/d/sub")
    sb.files.write("/d/x.txt", "x")
    entries = sb.files.list("/d")
    assert [(e.name, e.type) for e in entries] == [("sub", "directory"), ("x.txt", "file")]
    assert entries[0].is_dir and entries[1].is_file and entries[1].size == 1
    assert sb.files.exists("/d/x.txt") and not sb.files.exists("/d/y.txt")
    moved = sb.files.move("/d/x.txt", "/d/y.txt")
    assert moved.path == "/d/y.txt" and not sb.files.exists("/d/x.txt")
    sb.files.write("/d/z.txt", "z")
    with pytest.raises(kubox.ConflictError):
        sb.files.move("/d/y.txt", "/d/z.txt")
    sb.files.move("/d/y.txt", "/d/z.txt", overwrite=True)
    with pytest.raises(kubox.APIError):
        sb.files.remove("/d")  # not empty
    sb.files.remove("/d", recursive=True)
    assert not sb.files.exists("/d")


def test_missing_file_errors_name_the_file(sb):
    with pytest.raises(kubox.NotFoundError) as e:
        sb.files.read("/no/such")
    assert e.value.status == 404 and "/no/such" in str(e.value) and "local" in str(e.value)
    with pytest.raises(kubox.NotFoundError, match="/no/such"):
        sb.files.list("/no/such")


def test_watch_reports_changes_after_it_returns(sb):
    sb.files.make_dir("/w")
    with sb.files.watch("/w") as w:
        sb.files.write("/w/new.txt", "1")
        sb.files.remove("/w/new.txt")
        seen = []
        for ev in w:
            seen.append(ev)
            if ev.path == "/w/new.txt" and ev.op == "remove":
                break
    assert any(ev.path == "/w/new.txt" and ev.op in ("create", "rename") for ev in seen), seen


def test_watch_of_a_missing_directory_fails(sb):
    with pytest.raises(kubox.NotFoundError):
        sb.files.watch("/missing")
