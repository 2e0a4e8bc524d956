"""Time to first output of Sandbox.claim(...) + sb.run(...), one measurement per line read from
stdin (the caller waits for the pool to be full before each), printed as a JSON line:
{"claimed_ms": ..., "output_ms": ...}. test/e2e's BenchmarkKuboxRun/python-sdk drives it.

    python3 sdk/python/bench/first_output.py --pool python --namespace bench-1
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from kubox import Client


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", default="python")
    ap.add_argument("--namespace", default=None)
    args = ap.parse_args()
    with Client(namespace=args.namespace) as client:
        for _ in sys.stdin:
            t0 = time.perf_counter()
            sb = client.claim(pool=args.pool)
            claimed = time.perf_counter()
            r = sb.run("python3 -c 'print(1)'")
            done = time.perf_counter()
            if r.stdout != "1\n":
                raise SystemExit(f"unexpected output {r.stdout!r} (exit {r.exit_code}, stderr {r.stderr!r})")
            sb.close()
            print(json.dumps({"claimed_ms": (claimed - t0) * 1e3, "output_ms": (done - t0) * 1e3}), flush=True)


if __name__ == "__main__":
    main()
