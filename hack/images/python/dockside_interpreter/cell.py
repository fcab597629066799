"""Running one piece of code in the session's namespace, as the Python REPL would: statements executed, the
value of a last expression returned (and kept in _), any exception turned into a structured error whose
traceback shows the code's frames only (docs/design/interpreter.md, "result")."""

import ast
import asyncio
import base64
import builtins
import inspect
import linecache
import os
import pprint
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))

# IPython's display protocol: a value that offers one of these methods is shown in that type as well.
RICH_REPRS = {
    "text/html": "_repr_html_", "text/markdown": "_repr_markdown_", "text/latex": "_repr_latex_",
    "image/svg+xml": "_repr_svg_", "image/png": "_repr_png_", "image/jpeg": "_repr_jpeg_",
    "application/json": "_repr_json_",
}


class Session:
    """The namespace that every execution shares: a module named __main__ (so that pickle finds classes the code
    defines), and an event loop for code that awaits at top level."""

    def __init__(self):
        module = types.ModuleType("__main__")
        module.__builtins__ = builtins
        sys.modules["__main__"] = module
        self.globals = module.__dict__
        self.count = 0
        # running: the code runs (a SIGINT may raise into it); interrupt: an interrupt waits to be raised into
        # the current or next execution (server.py decides when one is meant for it).
        self.running = False
        self.interrupt = False
        self._loop = None

    def execute(self, code, text_limit):
        """(value, error): value is the last expression's {"repr", "data"} or None, error is {"name", "value",
        "traceback"} or None. text_limit caps each text of the value, in characters."""
        self.count += 1
        filename = f"<cell {self.count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            body, last = self._compile(code, filename)
            self.running = True
            try:
                self.take_interrupt()  # one that came before the code started
                self._run(body)
                value = self._run(last) if last is not None else None
            finally:
                self.running = False
            if value is None:
                return None, None
            self.globals["_"] = value
            return shown(value, text_limit), None
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the session goes on
            return None, error(exc)

    def take_interrupt(self):
        """Raises KeyboardInterrupt once per interrupt asked for; called in the main thread only."""
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt

    @staticmethod
    def _compile(code, filename):
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        body = compile(tree, filename, "exec", flags=flags)
        return body, (compile(last, filename, "eval", flags=flags) if last is not None else None)

    def _run(self, code):
        result = eval(code, self.globals)  # noqa: S307 -- running the caller's code is this module's purpose
        if code.co_flags & inspect.CO_COROUTINE:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            result = self._loop.run_until_complete(result)
        return result


def shown(value, limit):
    """The value as the result message carries it: its repr, and a MIME bundle with text/plain (pretty-printed)
    and whatever rich forms it offers."""
    data = {"text/plain": cut(pprint.pformat(value), limit)}
    if not isinstance(value, type):  # a class's _repr_html_ is an unbound function, not its display
        for mime, method in RICH_REPRS.items():
            rich = rich_repr(value, method)
            if rich is not None:
                data[mime] = cut(rich, limit) if isinstance(rich, str) else rich
    return {"repr": cut(repr(value), limit), "data": data}


def rich_repr(value, method):
    fn = getattr(value, method, None)
    if not callable(fn):
        return None
    try:
        out = fn()
    except Exception:  # a display method that fails is not shown, as in Jupyter
        return None
    if isinstance(out, tuple):  # (data, metadata)
        out = out[0]
    if isinstance(out, bytes):
        return base64.b64encode(out).decode("ascii")
    return out


def cut(text, limit):
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def error(exc):
    """{"name", "value", "traceback"}: the traceback as its lines, from the code's first frame on (none for code
    that did not compile) and without the interpreter's own frames."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    frames = list(te.stack)
    first = next((i for i, f in enumerate(frames) if f.filename.startswith("<cell ")), len(frames))
    te.stack = traceback.StackSummary.from_list([f for f in frames[first:] if not f.filename.startswith(HERE)])
    return {"name": type(exc).__name__, "value": str(exc), "traceback": list(te.format())}
