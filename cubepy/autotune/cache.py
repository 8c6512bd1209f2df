"""Tuning results on disk: one JSON file per kernel and device.

The user's cache is ``config.settings().cache_dir / "autotune"``; read-only results tuned on
known devices ship in the top-level ``autotune_cache/`` folder (same format, see its README).
A file::

    {"format": 1, "kernel": "mymodule.add", "target": "cpu", "device": "cpu: AMD EPYC 7B13",
     "entries": {KEY_ID: {"cubepy": "0.1.0", "fingerprint": ..., "configs_checksum": ...,
                          "key": {...}, "best_index": 1, "best": {"BLOCK": 256},
                          "timings": [...], "tuned_at": ..., "tuning_s": ...}}}

Writes take an exclusive ``fcntl.flock`` on ``<file>.lock``, re-read the file, merge the new
entry in and replace the file atomically (temp file + ``os.replace``), so two processes tuning
at once both finish and the file stays valid. A corrupt file or entry, or one written by
another cubepy version, is ignored with a warning (and retuned); a write that fails warns.

Example:
    >>> path = cache_path(user_dir(), "mymodule.add", "cpu: AMD EPYC 7B13")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import config
from ..errors import user_stacklevel
from .config import Config

try:
    import fcntl
except ImportError:  # Windows: writes stay atomic, but concurrent merges may lose an entry
    fcntl = None  # type: ignore[assignment]

FORMAT = 1
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "autotune_cache"
log = logging.getLogger("cubepy.autotune")
_ENTRY_FIELDS = {"cubepy": str, "fingerprint": str, "configs_checksum": str, "key": dict,
                 "best_index": int, "best": dict, "timings": list}


class AutotuneCacheWarning(UserWarning):
    """A cache file or entry was ignored (corrupt, another cubepy version) or not written."""


_warned: set[str] = set()


def _warn(message: str) -> None:
    if message not in _warned:  # once per process: a retune rewrites the entry anyway
        _warned.add(message)
        # at the user's call: a fixed depth named the tuner's lines, differently per path
        warnings.warn(message, AutotuneCacheWarning, stacklevel=user_stacklevel())


def version() -> str:
    """The running cubepy version (entries from other versions are retuned)."""
    import cubepy

    return cubepy.__version__


def user_dir() -> Path:
    """The user's autotune cache folder (``$CUBEPY_CACHE_DIR/autotune``)."""
    return config.settings().cache_dir / "autotune"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "_"


def file_name(kernel: str, device: str) -> str:
    """The file name of a kernel's results on a device: readable, and unique by a digest."""
    digest = hashlib.sha256(f"{kernel}\n{device}".encode()).hexdigest()[:8]
    return f"{_safe(kernel)}--{_safe(device)}-{digest}.json"


def cache_path(folder: Path, kernel: str, device: str) -> Path:
    """Where a kernel's results on a device live inside ``folder``."""
    return folder / file_name(kernel, device)


# ---- reading ----

def _valid_doc(doc: Any) -> bool:
    return (isinstance(doc, dict) and doc.get("format") == FORMAT
            and isinstance(doc.get("entries"), dict)
            and all(isinstance(doc.get(k), str) for k in ("kernel", "target", "device")))


def read_doc(path: Path, *, warn: bool = True) -> dict[str, Any] | None:
    """The parsed file, or None when it is missing or corrupt (a corrupt one warns)."""
    try:
        text = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None  # a file in place of the folder, or a folder in place of the file: `store`
        # says so, once, with what to do
    except OSError as err:
        if warn:
            _warn(f"cannot read autotune cache {path}: {err}; ignoring it")
        return None
    try:
        doc = json.loads(text.decode())
    except (ValueError, RecursionError) as err:  # before, bytes that are not UTF-8 (a
        # UnicodeDecodeError) or arrays nested too deep stopped the call
        doc, problem = None, f"not valid JSON ({type(err).__name__}: {str(err)[:200]})"
    else:
        problem = "not an autotune cache file of this format"
    if not _valid_doc(doc):
        if warn:
            _warn(f"ignoring corrupt autotune cache {path}: {problem}; it will be retuned "
                  "and rewritten")
        return None
    return doc


def entry_problem(entry: Any, *, fingerprint: str, checksum: str,
                  configs: Sequence[Config]) -> tuple[str, bool] | None:
    """Why a cached entry cannot be used, and whether that deserves a warning; None if usable.

    Example:
        >>> entry_problem({}, fingerprint="f", checksum="c", configs=[])[1]
        True
    """
    if not isinstance(entry, dict) or isinstance(entry.get("best_index"), bool) \
            or any(not isinstance(entry.get(name), kind) for name, kind in _ENTRY_FIELDS.items()):
        return "the entry is corrupt (missing or mistyped fields)", True
    if entry["cubepy"] != version():
        return f"it was tuned by cubepy {entry['cubepy']} (this is {version()})", True
    if entry["fingerprint"] != fingerprint:
        return "the kernel's source changed", False
    if entry["configs_checksum"] != checksum:
        return "the config list changed", False
    index = entry["best_index"]
    if not 0 <= index < len(configs) or configs[index].as_json() != entry["best"]:
        return "the entry is corrupt (its winner is not in the config list)", True
    return None


def find(kernel: str, device: str, key_id: str, *, fingerprint: str, checksum: str,
         configs: Sequence[Config]) -> tuple[dict[str, Any], Path] | None:
    """The usable entry for this key (the user's cache first, then the shipped one)."""
    for folder, shipped in ((user_dir(), False), (SHIPPED_DIR, True)):
        path = cache_path(folder, kernel, device)
        doc = read_doc(path, warn=not shipped)
        entry = doc["entries"].get(key_id) if doc else None
        if entry is None:
            continue
        problem = entry_problem(entry, fingerprint=fingerprint, checksum=checksum,
                                configs=configs)
        if problem is None:
            return entry, path
        reason, serious = problem
        message = f"ignoring the cached autotune result for {kernel} in {path}: {reason}"
        if serious and not shipped:
            _warn(message + "; retuning")
        else:
            log.info(message)
    return None


# ---- writing ----

@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<path>.lock`` (between processes, through ``flock``)."""
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a+") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def write_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` as JSON through a temp file in the same folder and ``os.replace``; the
    file keeps its permissions (a new one gets those of any new file: 0o666 less the umask)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(doc, handle, indent=1, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file 0o600: exported to autotune_cache/, shipped files could be
        # read by their owner only, and by no other user of an installed cubepy
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _new_file_mode() -> int:
    """0o666 less the process umask, read from /proc where there is one (``os.umask`` reads
    it only by setting it, which races with other threads creating files), else 0o644."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


class CorruptCacheFile(ValueError):
    """A cache file that ``export`` would have to overwrite to merge into."""


def _corrupt(path: Path) -> CorruptCacheFile:
    return CorruptCacheFile(f"{path} is not a valid autotune cache file (a merge conflict, or "
                            "a hand edit?); nothing was written: fix it, or delete it to "
                            "replace it with the exported entries")


def merge_entries(path: Path, header: dict[str, str], entries: dict[str, Any], *,
                  keep_corrupt: bool = False) -> None:
    """Under the lock: read ``path`` (corrupt: start afresh, or with ``keep_corrupt`` raise
    ``CorruptCacheFile``), add ``entries``, replace it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):
        doc = read_doc(path, warn=False)
        if doc is None and keep_corrupt and path.exists():
            raise _corrupt(path)
        if doc is None:
            doc = {"format": FORMAT, **header, "entries": {}}
        doc["entries"].update(entries)
        write_atomic(path, doc)


def store(kernel: str, target: str, device: str, key_id: str, entry: dict[str, Any]) -> Path | None:
    """Merge one entry into the user's cache; None (and a warning) when it cannot be written."""
    path = cache_path(user_dir(), kernel, device)
    try:
        merge_entries(path, {"kernel": kernel, "target": target, "device": device},
                      {key_id: entry})
    except OSError as err:
        _warn(_write_problem(path, err))
        return None
    return path


def _write_problem(path: Path, error: OSError) -> str:
    """Why the cache cannot be written, and what to do: before, a file in place of the
    folder warned "[Errno 17] File exists" about the folder."""
    in_the_way = next((p for p in (path.parent, *path.parents) if p.is_file()), None)
    if in_the_way is not None:
        return (f"cannot write the autotune cache: {in_the_way} is a file, not a folder; "
                "results are not kept. Move that file away, or point CUBEPY_CACHE_DIR at "
                "a folder")
    folder = next((p for p in (path, path.with_name(path.name + ".lock")) if p.is_dir()), None)
    if folder is not None:
        return (f"cannot write the autotune cache: {folder} is a folder, not a file; results "
                "are not kept. Move that folder away")
    return (f"cannot write the autotune cache {path}: {error}; results are not kept. Make "
            f"{path.parent} writable, or point CUBEPY_CACHE_DIR at a folder that is")


# ---- the command line's operations ----

def cache_files(folder: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Every cache file in ``folder`` with its contents (None when corrupt), sorted by name."""
    if not folder.is_dir():
        return []
    return [(path, read_doc(path, warn=False)) for path in sorted(folder.glob("*.json"))]


def matches(doc: dict[str, Any] | None, kernel: str | None, device: str | None) -> bool:
    """Whether a file's kernel and device contain the given texts (case-insensitive)."""
    if doc is None:
        return kernel is None and device is None
    return ((kernel is None or kernel.lower() in doc["kernel"].lower())
            and (device is None or device.lower() in doc["device"].lower()))


def clear(folder: Path, kernel: str | None = None, device: str | None = None) -> list[Path]:
    """Delete the matching cache files (with no filter: all, corrupt and temp ones included)."""
    removed = []
    for path, doc in cache_files(folder):
        if matches(doc, kernel, device) or (kernel is None and device is None):
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".lock").unlink(missing_ok=True)
            removed.append(path)
    if kernel is None and device is None:  # leftovers of interrupted writes
        for path in [*folder.glob("*.json.*.tmp"), *folder.glob("*.json.lock")]:
            path.unlink(missing_ok=True)
    return removed


def export(device: str, out_dir: Path | None = None, kernel: str | None = None) -> list[Path]:
    """Merge the user's entries for one device into ``out_dir`` (default: the shipped folder).

    ``device`` is matched as a case-insensitive substring; it must name exactly one device.
    """
    out_dir = out_dir or SHIPPED_DIR
    chosen = [(p, d) for p, d in cache_files(user_dir()) if d and matches(d, kernel, device)]
    devices = sorted({d["device"] for _, d in chosen})
    exact = [d for d in devices if d.lower() == device.lower()]
    if len(devices) > 1 and not exact:
        raise ValueError(f"--device {device!r} matches several devices: {', '.join(devices)}")
    chosen = [(p, d) for p, d in chosen if not exact or d["device"] == exact[0]]
    for path, _ in chosen:  # all or nothing: a corrupt one found after others were written
        target = out_dir / path.name  # would leave a half export
        if target.exists() and read_doc(target, warn=False) is None:
            raise _corrupt(target)
    written = []
    for path, doc in chosen:
        target = out_dir / path.name
        header = {k: doc[k] for k in ("kernel", "target", "device")}
        merge_entries(target, header, doc["entries"], keep_corrupt=True)
        target.with_name(target.name + ".lock").unlink(missing_ok=True)  # no litter in the repo
        written.append(target)
    return written
