"""Times Sandbox.files.write and files.read for test/bench (BenchmarkPythonFiles): attaches to a Sandbox once,
writes the local file's bytes to the remote path, reads them back, checks they are the same, and prints the two
durations in seconds on one line: "WRITE READ".

usage: python3 bench/files_rounds.py NAMESPACE SANDBOX LOCAL_FILE REMOTE_PATH
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dockside import Sandbox  # noqa: E402  (the path above finds the package from a checkout)


def main(argv):
    namespace, name, local, remote = argv[1:5]
    with open(local, "rb") as f:
        data = f.read()
    sbx = Sandbox.attach(name, namespace=namespace)
    start = time.monotonic()
    sbx.files.write(remote, data)
    wrote = time.monotonic() - start
    start = time.monotonic()
    back = sbx.files.read(remote, format="bytes")
    read = time.monotonic() - start
    if back != data:
        print(f"read {len(back)} bytes back, not the {len(data)} written", file=sys.stderr)
        return 1
    print(f"{wrote:.6f} {read:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
