"""Times Sandbox.run for test/bench (BenchmarkPythonClient): attaches to a Sandbox once, then for each line
read on stdin runs the command given on the command line and writes the round trip in seconds, one line each,
so that the benchmark can alternate it with `kubectl dockside run` and `docker exec` of the same command.

usage: python3 bench/run_rounds.py NAMESPACE SANDBOX WANT_STDOUT -- COMMAND [ARG...]
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dockside import Sandbox  # noqa: E402  (the path above finds the package from a checkout)


def main(argv):
    namespace, name, want = argv[1:4]
    command = argv[argv.index("--") + 1:]
    sbx = Sandbox.attach(name, namespace=namespace)
    for _ in sys.stdin:
        start = time.monotonic()
        res = sbx.run(command, timeout=60)
        elapsed = time.monotonic() - start
        if res.reason != "Completed" or res.stdout != want:
            print(f"{res.name} ended {res.reason} ({res.message}) with {res.stdout!r}, want {want!r}", file=sys.stderr)
            return 1
        print(f"{elapsed:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
