# kubox-agent's Python driver for the code interpreter (internal/agent/codeinterp): one long-lived
# interpreter per context. Requests arrive as JSON lines on a private copy of fd 0 (fd 0 itself
# becomes /dev/null, so input() in user code reads nothing of the protocol). User output goes to
# fd 1 and fd 2 as is; results, errors and the end of each execution are frames on fd 1:
# RS + nonce + JSON + LF, the nonce being the first line the agent sends.
import ast
import base64
import io
import json
import linecache
import os
import signal
import sys
import traceback

RS = "\x1e"


def _open_protocol():
    proto = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
        setattr(sys, name, stream)
    return proto


class Driver:
    def __init__(self, proto):
        self.proto = proto
        self.nonce = proto.readline().decode().strip()
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.count = 0
        self.plt = None

    def frame(self, msg):
        sys.stdout.flush()
        data = (RS + self.nonce + json.dumps(msg) + "\n").encode("utf-8", "backslashreplace")
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]

    def run(self):
        while True:
            line = self.proto.readline()
            if not line:
                return
            req = json.loads(line)
            self.count += 1
            self.frame({"type": "number_of_executions", "execution_count": self.count})
            saved = self.set_env(req.get("env") or {})
            try:
                # The agent interrupts an execution with SIGINT (again until it ends): it raises
                # KeyboardInterrupt in the user's code only, never in the driver's.
                signal.signal(signal.SIGINT, signal.default_int_handler)
                try:
                    self.execute(req["code"])
                finally:
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
            except BaseException as e:  # KeyboardInterrupt and SystemExit too, as IPython
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                self.error(e)
            finally:
                os.environ.update({k: v for k, v in saved.items() if v is not None})
                for k in [k for k, v in saved.items() if v is None]:
                    os.environ.pop(k, None)
            try:
                self.figures()
            except BaseException as e:
                self.error(e)
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(2, (RS + self.nonce + "\n").encode())
            self.frame({"type": "end"})

    def set_env(self, env):
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        return saved

    def execute(self, code):
        name = "<cell %d>" % self.count
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        tree = ast.parse(code, name, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), self.ns)
        if last is not None:
            value = eval(compile(last, name, "eval"), self.ns)
            if value is not None:
                self.ns["_"] = value
                self.result(value, True)

    def result(self, value, main):
        bundle = {"type": "result", "is_main_result": main}
        for key, method in (("html", "_repr_html_"), ("markdown", "_repr_markdown_"),
                            ("svg", "_repr_svg_"), ("png", "_repr_png_"), ("jpeg", "_repr_jpeg_"),
                            ("latex", "_repr_latex_"), ("json", "_repr_json_"),
                            ("javascript", "_repr_javascript_")):
            fn = getattr(value, method, None)
            if fn is None or isinstance(value, type):
                continue
            try:
                data = fn()
            except Exception:
                continue
            if isinstance(data, tuple):
                data = data[0]
            if data is None:
                continue
            if isinstance(data, bytes):
                data = base64.b64encode(data).decode()
            bundle[key] = data
        bundle["text"] = repr(value)
        self.frame(bundle)

    def figures(self):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in plt.get_fignums():
            fig = plt.figure(num)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", bbox_inches="tight")
            self.frame({"type": "result", "is_main_result": False, "text": repr(fig),
                        "png": base64.b64encode(buf.getvalue()).decode()})
            plt.close(fig)

    def error(self, e):
        te = traceback.TracebackException(type(e), e, e.__traceback__)
        # The driver's own frames (python3 -c: "<string>") are not the user's: only the cell's stay.
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != "<string>"])
        self.frame({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": "".join(te.format())})


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("MPLBACKEND", "Agg")
    proto = _open_protocol()
    Driver(proto).run()


if __name__ == "__main__":
    main()
