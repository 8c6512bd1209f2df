"""Load generated Triton source as a real module, and switch Triton between GPU and interpreter.

Why a file: ``triton.jit`` (and the interpreter's AST rewriter) read a kernel's source with
``inspect``, which finds it through the function's file. ``load_jit_function`` therefore writes
the source to ``<cache_dir>/triton/<sha256 prefix>.py`` (atomically: a temp file, then
``os.replace``) and imports it with ``importlib``. The module does ``import triton.language as
tl``: the interpreter patches ``triton.language`` only where a kernel's globals hold it.

Why a mode switch: Triton decides "interpreter or compiler" when ``@triton.jit`` *runs*
(``triton.knobs.runtime.interpret``, i.e. ``TRITON_INTERPRET`` read at decoration time), and
that includes the ``@jit`` helpers of ``triton.language`` itself (``tl.sum``, ``tl.max``,
``tl.cdiv``, ``tl.sigmoid``, ``tl.cumsum``, ...), decorated once when ``triton`` is first
imported. Seen on Triton 3.6 and 3.9: with ``triton`` imported before ``TRITON_INTERPRET=1``
was set, an interpreted kernel calling ``tl.sum`` fails with "Cannot call @triton.jit'd
outside of the scope of a kernel"; the other way round, the compiler cannot use interpreted
helpers. Setting the variable before importing generated modules is therefore not enough.

So this module keeps, for every ``@triton.jit`` function in ``triton.language`` and in the
modules it loaded (or that were handed to ``register_module``), both forms: the
``JITFunction`` and an ``InterpretedFunction`` of the same Python function. ``interpret_mode``
sets ``triton.knobs.runtime.interpret`` (and so ``TRITON_INTERPRET``) and puts the matching
form of each into its module, so ``tl.sum`` is whatever the current mode needs; leaving the
interpreter also undoes patches the interpreter leaves behind in ``triton.language`` (see
``_pristine``). The mode is process-wide: compiler-mode bodies run side by side, while an
interpreter-mode body runs alone (the interpreter patches ``triton.language`` during each
launch, so two threads interpreting at once would trip over each other). Outside any
``with``, the last mode stays in force, so functions decorated afterwards get it.

The mode is chosen by ``should_interpret()``: ``cubepy.config.settings().triton_interpret``
when set (``CUBEPY_TRITON_INTERPRET``), else the interpreter exactly when Triton finds no
active GPU driver (``triton.runtime.driver.active`` raises; on Triton 3.6 that includes a
CUDA machine without torch, since 3.6's NVIDIA driver asks torch whether CUDA is there).

Example:
    >>> fn = load_jit_function(SOURCE, "add_kernel", cache_dir)   # doctest: +SKIP
    >>> with interpret_mode(should_interpret()):                   # doctest: +SKIP
    ...     as_mode(fn, should_interpret())[grid](*args)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import sys
import threading
import types
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import triton
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from ... import config

KernelFunction = JITFunction | InterpretedFunction

# -- the two forms of one Python function ----------------------------------------------------

_twins: weakref.WeakKeyDictionary[Any, dict[bool, Any]] = weakref.WeakKeyDictionary()


def _python_fn(fn: Any) -> Any:
    if isinstance(fn, (JITFunction, InterpretedFunction)):
        return fn.fn
    raise TypeError(f"expected a @triton.jit function, got {type(fn).__name__}")


def as_mode(fn: KernelFunction, interpret: bool) -> KernelFunction:
    """The form of a ``@triton.jit`` function for one mode (cached: one object per mode).

    ``interpret=True`` gives an ``InterpretedFunction``, ``False`` a ``JITFunction`` (whose
    compiled kernels it caches, so the same object is returned every time).

    Example:
        >>> type(as_mode(kernel, True)).__name__    # doctest: +SKIP
        'InterpretedFunction'
    """
    py = _python_fn(fn)
    forms = _twins.get(py)
    if forms is None:
        forms = _twins[py] = {isinstance(fn, InterpretedFunction): fn}
    if interpret not in forms:
        if interpret:
            forms[True] = InterpretedFunction(py)
        else:
            kwargs = dict(getattr(fn, "kwargs", None) or {})
            forms[False] = JITFunction(py, **kwargs)
    return forms[interpret]


# -- the process-wide mode --------------------------------------------------------------------

_cond = threading.Condition(threading.RLock())
_users = 0
_local = threading.local()
_registered: list[tuple[Any, str, Any]] = []  # (owner, attribute, python function)
_registered_modules: set[str] = set()
_stdlib_scanned = False
_applied: bool | None = None
_MISSING = object()


def _scan(owner: Any, key_prefix: str) -> None:
    """Record every ``@triton.jit`` attribute of ``owner`` (a module or class) for swapping."""
    if key_prefix in _registered_modules:
        return
    _registered_modules.add(key_prefix)
    for attr, value in list(vars(owner).items()):
        if isinstance(value, (JITFunction, InterpretedFunction)):
            as_mode(value, isinstance(value, InterpretedFunction))  # remember the original form
            _registered.append((owner, attr, value.fn))


def _scan_stdlib() -> None:
    global _stdlib_scanned
    if _stdlib_scanned:
        return
    import triton.language as tl

    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (
            name == "triton.language" or name.startswith("triton.language.")
        ):
            _scan(module, name)
    _scan(tl.tensor, "triton.language.tensor<class>")  # tl.sum etc. are also tensor methods
    _stdlib_scanned = True


def register_module(module: types.ModuleType) -> None:
    """Let ``interpret_mode`` swap the ``@triton.jit`` functions of ``module`` too.

    Needed for modules whose kernels call other ``@triton.jit`` functions of their own and may
    run in either mode (``load_jit_function`` registers the modules it loads).

    Example:
        >>> register_module(my_kernels)   # doctest: +SKIP
    """
    with _cond:
        first = len(_registered)
        _scan(module, f"module:{module.__name__}:{id(module)}")
        if _applied is not None:
            _swap(_registered[first:], _applied)


def _language_namespaces() -> list[Any]:
    """The modules of ``triton.language`` and the classes they define: what the interpreter
    patches (builtins, ``tensor`` methods, ``dtype.to_ir``, ``range``, ``reduce``...)."""
    seen: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType):
            continue
        if name != "triton.language" and not name.startswith("triton.language."):
            continue
        seen.setdefault(id(module), module)
        for value in list(vars(module).values()):
            if isinstance(value, type) and getattr(value, "__module__", "").startswith(
                "triton.language"
            ):
                seen.setdefault(id(value), value)
    return list(seen.values())


def _snapshot() -> list[tuple[Any, dict[str, Any]]]:
    import triton.language  # noqa: F401  (make sure every submodule is loaded)

    return [(owner, dict(vars(owner))) for owner in _language_namespaces()]


# Taken when this module is imported, before cubepy runs the interpreter. Why: a kernel run on
# the interpreter calls the ``triton.language`` helpers it uses (``tl.sum``...) as interpreted
# functions, and each such call patches ``triton.language.core`` for the interpreter without
# undoing it (seen on Triton 3.6 and 3.9). The compiler then fails on the leftover patches
# ("'value' object has no attribute 'dtype'"), so leaving interpreter mode puts back the values
# recorded here.
_pristine = _snapshot()


def _restore_pristine() -> None:
    for owner, original in _pristine:
        current = vars(owner)
        for key, value in original.items():
            if current.get(key, _MISSING) is not value:
                setattr(owner, key, value)
        if isinstance(owner, type):
            # Attributes the interpreter added to a class go; names it added to a module's
            # globals stay, since the interpreter's rewritten functions look them up there.
            for key in [k for k in current if k not in original]:
                delattr(owner, key)


def _fix_interpreter_index() -> None:
    """Make the interpreter's ``tensor.__index__`` work with NumPy >= 2.4 on Triton 3.6.

    Triton 3.6 patches ``tl.tensor.__index__`` to ``int(self.handle.data)``; a scalar's data is
    a 1-element 1-d array, which recent NumPy refuses to convert ("only 0-dimensional arrays
    can be converted to Python scalars"), so ``for k in range(tl.cdiv(K, BK))`` fails. 3.9
    squeezes first; this wraps the patching function to do the same on any version.
    """
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor
    if getattr(original, "_cubepy_fixed", False):
        return

    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patch_lang_tensor._cubepy_fixed = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patch_lang_tensor


def _set_knob(enabled: bool) -> None:
    # Setting the knob also sets TRITON_INTERPRET (Triton propagates knobs to the environment),
    # so child processes and Triton versions that read the variable agree.
    try:
        triton.knobs.runtime.interpret = enabled
    except AttributeError:  # pragma: no cover - Triton before knobs (3.3): the variable alone
        pass
    os.environ["TRITON_INTERPRET"] = "1" if enabled else "0"


def _swap(entries: list[tuple[Any, str, Any]], enabled: bool) -> None:
    for owner, attr, py in entries:
        forms = _twins.get(py)
        if forms is not None:
            setattr(owner, attr, as_mode(next(iter(forms.values())), enabled))


def _apply(enabled: bool) -> None:
    global _applied
    _scan_stdlib()
    if _applied == enabled:
        return
    if enabled:
        _fix_interpreter_index()
    else:
        _restore_pristine()
    _set_knob(enabled)
    _swap(_registered, enabled)
    _applied = enabled


def interpreter_applied() -> bool:
    """True when this module has switched ``@triton.jit`` functions to the interpreter (a
    lock-free read for the launch path; ``current_interpret_mode`` is the full answer)."""
    return bool(_applied)


def current_interpret_mode() -> bool:
    """The mode in force: True when ``@triton.jit`` functions run on the interpreter.

    Example:
        >>> with interpret_mode(True):
        ...     current_interpret_mode()
        True
    """
    applied = _applied  # one read of a global: no lock on the launch path
    if applied is not None:
        return applied
    with _cond:
        if _applied is not None:
            return _applied
        return bool(triton.knobs.runtime.interpret)


@contextlib.contextmanager
def interpret_mode(enabled: bool) -> Iterator[None]:
    """Run the body with Triton in interpreter (True) or compiler (False) mode; see module doc.

    Nesting works (the outer mode comes back on exit). Compiler-mode bodies of several threads
    run side by side; an interpreter-mode body waits until no other thread is in either mode,
    and others wait for it.

    Example:
        >>> with interpret_mode(False):
        ...     current_interpret_mode()
        False
    """
    global _users
    enabled = bool(enabled)
    stack: list[bool] = _local.__dict__.setdefault("stack", [])
    with _cond:
        # The interpreter patches triton.language for the length of each launch, so it runs
        # one thread at a time; compiler-mode bodies may run side by side.
        while _users > len(stack) and (enabled or _applied != enabled):
            _cond.wait()
        _apply(enabled)
        stack.append(enabled)
        _users += 1
    try:
        yield
    finally:
        with _cond:
            stack.pop()
            _users -= 1
            _cond.notify_all()
            if stack and stack[-1] != _applied:
                while _users > len(stack) and (stack[-1] or _applied != stack[-1]):
                    _cond.wait()
                _apply(stack[-1])
            _cond.notify_all()


def set_interpret_mode(enabled: bool) -> None:
    """Put Triton in one mode for the rest of the process (no ``with``); see ``interpret_mode``.

    Example:
        >>> set_interpret_mode(should_interpret())   # doctest: +SKIP
    """
    with interpret_mode(enabled):
        pass


@functools.lru_cache(maxsize=1)
def gpu_driver_available() -> bool:
    """Whether Triton finds exactly one active GPU driver (CUDA or HIP); cached.

    Example:
        >>> gpu_driver_available()   # doctest: +SKIP
        False
    """
    try:
        from triton.runtime import driver

        driver.active.get_current_target()
    except Exception:
        return False
    return True


def should_interpret() -> bool:
    """Interpreter or GPU for the ``triton`` target: ``CUBEPY_TRITON_INTERPRET`` if set, else
    the interpreter exactly when no GPU driver is active.

    Example:
        >>> should_interpret()   # on a machine without a GPU   # doctest: +SKIP
        True
    """
    explicit = config.settings().triton_interpret
    if explicit is not None:
        return explicit
    return not gpu_driver_available()


# -- generated source as a module -------------------------------------------------------------

_modules: dict[str, types.ModuleType] = {}
_load_lock = threading.Lock()


def source_path(source: str, cache_dir: Path) -> Path:
    """Where ``load_jit_function`` keeps ``source``: ``<cache_dir>/triton/<sha256[:20]>.py``.

    Example:
        >>> source_path("x = 1\\n", Path("/tmp/c")).name
        '9e26bf369911c45c243c.py'
    """
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:20]
    return Path(cache_dir) / "triton" / f"{digest}.py"


def _write_atomic(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def load_module(source: str, cache_dir: Path) -> types.ModuleType:
    """Write ``source`` under ``cache_dir`` and import it (once per source text and process).

    Its ``@triton.jit`` functions are registered with ``interpret_mode``.

    Example:
        >>> mod = load_module("import triton.language as tl\\n...", cache_dir)  # doctest: +SKIP
    """
    path = source_path(source, cache_dir).absolute()
    folder = hashlib.sha256(str(path.parent).encode("utf-8")).hexdigest()[:8]
    module_name = f"_cubepy_triton_{path.stem}_{folder}"
    with _load_lock:
        _write_atomic(path, source)  # also when cached: inspect reads the file, keep it there
        module = _modules.get(module_name)
        if module is not None:
            return module
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has one
            raise ImportError(f"cannot import generated Triton source {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # inspect and pickle look modules up by name
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        register_module(module)
        _modules[module_name] = module
        return module


def load_jit_function(
    source: str, name: str, cache_dir: Path, *, interpret: bool | None = None
) -> KernelFunction:
    """The ``@triton.jit`` function ``name`` of generated ``source``, in the form for one mode.

    ``interpret=None`` means ``current_interpret_mode()`` (a ``JITFunction`` unless Triton is in
    interpreter mode). Run it inside ``interpret_mode(interpret)`` so the ``triton.language``
    helpers it calls are in the same mode.

    Example:
        >>> src = "import triton\\nimport triton.language as tl\\n@triton.jit\\ndef k(x): pass\\n"
        >>> load_jit_function(src, "k", cache_dir)   # doctest: +SKIP
        JITFunction(_cubepy_triton_...:k)
    """
    module = load_module(source, cache_dir)
    fn = getattr(module, name, None)
    if not isinstance(fn, (JITFunction, InterpretedFunction)):
        raise AttributeError(
            f"generated Triton source {module.__file__} has no @triton.jit {name!r}"
        )
    mode = current_interpret_mode() if interpret is None else interpret
    return as_mode(fn, mode)
