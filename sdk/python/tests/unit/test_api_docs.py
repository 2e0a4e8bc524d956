"""Every public name of the package has a docstring and type hints (what `help()`, IDEs and
type checkers show)."""

from __future__ import annotations

import inspect
import typing

import kubox
import kubox.aio
import kubox.errors
import kubox.types


def public_members():
    for name in kubox.__all__:
        obj = getattr(kubox, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # a type alias (ProcessEvent), documented where it is defined
        yield f"kubox.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__",):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    yield f"kubox.{name}.{attr}", member


def test_every_public_name_has_a_docstring():
    missing = [n for n, obj in public_members()
               if not n.endswith("__init__") and not (inspect.getdoc(obj) or "").strip()]
    assert missing == []


def test_every_public_function_has_type_hints():
    untyped = []
    for n, obj in public_members():
        if not inspect.isfunction(obj):
            continue
        sig = inspect.signature(obj)
        hints = typing.get_type_hints(obj)
        params = [p for p in sig.parameters if p not in ("self", "cls") and
                  sig.parameters[p].kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
        if any(p not in hints for p in params) or "return" not in hints:
            untyped.append(n)
    assert untyped == []


def surface(obj):
    return {n for n in dir(obj) if not n.startswith("_")} - {"aio"}


def test_sync_and_async_sandboxes_have_the_same_surface():
    sync, async_ = kubox.Sandbox.attach("http://127.0.0.1:9", "t"), kubox.AsyncSandbox.attach("http://127.0.0.1:9", "t")
    assert surface(sync) == surface(async_)
    assert surface(sync.files) == surface(async_.files)
    sync.close()


def test_sync_and_async_processes_have_the_same_surface():
    # id, pid, exit and stdin_error are attributes of an AsyncProcess, properties of a Process.
    assert surface(kubox.Process) - {"close"} == surface(kubox.AsyncProcess) - {"aclose"} | {"id", "pid", "exit", "stdin_error"}
