"""run_code keeps a bounded Execution: code that prints without end cannot exhaust the caller's
memory, while the callbacks still get every piece."""

from __future__ import annotations

import json

from kubox import _code
from kubox.types import Execution


def feed(messages, **callbacks):
    ex, kept = Execution(), _code._Kept()
    cb = {"on_stdout": None, "on_stderr": None, "on_result": None, **callbacks}
    for m in messages + [{"type": "end_of_execution"}]:
        if _code._message(ex, kept, json.dumps(m), cb["on_stdout"], cb["on_stderr"], cb["on_result"]):
            return ex
    raise AssertionError("no end_of_execution")


def test_output_and_results_are_bounded_and_callbacks_complete():
    piece = "é" * (100 << 10)  # 200 KiB in UTF-8
    pieces = _code.DEFAULT_CODE_OUTPUT_BYTES // len(piece.encode()) + 3
    png = "A" * (8 << 20)
    images = _code.DEFAULT_CODE_RESULT_BYTES // len(png) + 2
    msgs = []
    for _ in range(pieces):
        msgs += [{"type": "stdout", "text": piece}, {"type": "stderr", "text": "short\n"}]
    msgs += [{"type": "result", "png": png}] * images
    msgs += [{"type": "result", "text": "42", "is_main_result": True}]
    seen, results = [], []
    ex = feed(msgs, on_stdout=seen.append, on_result=results.append)

    out = "".join(ex.logs.stdout)
    assert ex.stdout_truncated
    assert _code.DEFAULT_CODE_OUTPUT_BYTES - 1 <= len(out.encode()) <= _code.DEFAULT_CODE_OUTPUT_BYTES
    assert out.strip("é") == "", "cut inside a character"
    assert not ex.stderr_truncated and len(ex.logs.stderr) == pieces
    assert len(seen) == pieces and all(s == piece for s in seen), "on_stdout must get everything"
    assert len(results) == images + 1, "on_result must get everything"
    assert ex.results_truncated
    assert len(ex.results) <= _code.DEFAULT_CODE_RESULT_BYTES // len(png) + 1
    assert ex.text == "42"


def test_small_execution_is_whole():
    ex = feed([{"type": "stdout", "text": "hi\n"}, {"type": "result", "text": "1", "is_main_result": True}])
    assert ex.logs.stdout == ["hi\n"] and ex.text == "1"
    assert not (ex.stdout_truncated or ex.stderr_truncated or ex.results_truncated)
