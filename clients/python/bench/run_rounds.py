"""Times the Python client for test/bench (BenchmarkPythonClient, BenchmarkPythonStreamed): attaches to a
Sandbox once, then for each line read on stdin runs the command given on the command line and writes the round
trip in seconds, one line each, so that the benchmark can alternate it with `kubectl dockside run` and
`docker exec` of the same command. MODE says how: run (Sandbox.run, its default path
through the data plane), record (Sandbox.run(record=True), an Execution), commands (sbx.commands.run, streamed
over exec), or code (sbx.run_code, the interpreter; COMMAND is one Python expression and WANT its repr).

usage: python3 bench/run_rounds.py MODE NAMESPACE SANDBOX WANT -- COMMAND [ARG...]
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dockside import Sandbox  # noqa: E402  (the path above finds the package from a checkout)


def runner(mode, sbx, command):
    """A function that runs command once and returns what it printed (its value's repr for code)."""
    if mode in ("run", "record"):
        def once():
            res = sbx.run(command, timeout=60, record=mode == "record")
            if res.reason != "Completed":
                raise RuntimeError(f"{res.name} ended {res.reason} ({res.message})")
            return res.stdout
    elif mode == "commands":
        def once():
            res = sbx.commands.run(command, timeout=60)
            if res.exit_code != 0:
                raise RuntimeError(f"exit code {res.exit_code}: {res.stderr}")
            return res.stdout
    elif mode == "code":
        def once():
            res = sbx.run_code(" ".join(command), timeout=60)
            if res.error:
                raise RuntimeError(str(res.error))
            return res.value.repr if res.value else ""
    else:
        raise SystemExit(f"MODE is run, record, commands or code, not {mode!r}")
    return once


def main(argv):
    mode, namespace, name, want = argv[1:5]
    command = argv[argv.index("--") + 1:]
    once = runner(mode, Sandbox.attach(name, namespace=namespace), command)
    for _ in sys.stdin:
        start = time.monotonic()
        got = once()
        elapsed = time.monotonic() - start
        if got != want:
            print(f"{mode} printed {got!r}, want {want!r}", file=sys.stderr)
            return 1
        print(f"{elapsed:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
