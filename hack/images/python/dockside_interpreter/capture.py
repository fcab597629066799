"""The output of the code the interpreter runs, caught where the process writes it: file descriptors 1 and 2
become pipes that a pump thread reads, so that print(), a C library's printf and a subprocess's output all
land in the execution that is running, in the order each stream was written (docs/design/interpreter.md,
"Output")."""

import codecs
import io
import os
import select
import sys
import threading

NAMES = ("stdout", "stderr")


class Output:
    """One execution's stdout and stderr: the first limit bytes of each kept, the rest counted. stream, when
    given, is called with (name, text) for every piece kept, as it arrives (never a split UTF-8 character)."""

    def __init__(self, limit, stream=None):
        self.limit, self.stream = limit, stream
        self.kept = {name: bytearray() for name in NAMES}
        self.dropped = dict.fromkeys(NAMES, 0)
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in NAMES}

    def add(self, name, data):
        room = max(0, self.limit - len(self.kept[name]))
        keep = data[:room]
        self.kept[name] += keep
        self.dropped[name] += len(data) - len(keep)
        if keep and self.stream:
            self._emit(name, self._decoders[name].decode(keep))

    def finish(self):
        for name in NAMES:
            self._emit(name, self._decoders[name].decode(b"", final=True))

    def _emit(self, name, text):
        if text and self.stream:
            self.stream(name, text)

    def fields(self):
        """The result message's output fields (docs/design/interpreter.md, "result")."""
        out = {}
        for name in NAMES:
            out[name] = self.kept[name].decode("utf-8", "replace")
            out[name + "_truncated_bytes"] = self.dropped[name]
        return out


class Capture:
    """Owns file descriptors 1 and 2. Output written while no execution runs (a thread or a child the code left
    running) is kept for the next one."""

    def __init__(self, limit):
        self._lock = threading.Lock()
        self._names = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            r, w = os.pipe()
            os.dup2(w, fd)  # inheritable: a subprocess writes into the pipe too
            os.close(w)
            os.set_blocking(r, False)
            self._names[r] = name
        sys.stdout = text_stream(1)
        sys.stderr = text_stream(2)
        self._limit = limit
        self._target = Output(limit)
        threading.Thread(target=self._pump, name="dockside-output", daemon=True).start()

    def begin(self, output):
        """Sends what is written from now on to output, after what was written between executions."""
        with self._lock:
            idle, self._target = self._target, output
            for name in NAMES:
                if idle.kept[name]:
                    output.add(name, bytes(idle.kept[name]))
                output.dropped[name] += idle.dropped[name]

    def end(self):
        """Flushes the code's streams and takes everything written so far into the running execution's output,
        which it returns; later output waits for the next execution."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # the code closed or replaced it
        with self._lock:
            for fd in self._names:
                self._drain(fd)
            done, self._target = self._target, Output(self._limit)
        done.finish()
        return done

    def _pump(self):
        while True:
            readable, _, _ = select.select(list(self._names), [], [])
            # Reading only under the lock is what lets end() know that nothing written before it is in flight.
            with self._lock:
                for fd in readable:
                    self._drain(fd)

    def _drain(self, fd):
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not data:
                return
            self._target.add(self._names[fd], data)


def text_stream(fd):
    """sys.stdout or sys.stderr over fd, line-buffered (flushed at each execution's end as well)."""
    return io.open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
