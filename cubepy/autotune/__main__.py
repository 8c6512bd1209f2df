"""``python -m cubepy.autotune list|show|clear|export``: the autotune cache from a shell.

- ``list``: every cache file (the user's, then the shipped ``autotune_cache/``), one a line.
- ``show [KERNEL] [--device NAME] [--shipped]``: the entries: key, winner, every timing.
- ``clear [KERNEL] [--device NAME]``: delete the user's cache files (all, without filters).
- ``export --device NAME [--kernel KERNEL] [--out DIR]``: merge the user's entries for one
  device into ``autotune_cache/`` (or ``DIR``), to ship them.

KERNEL and NAME match as case-insensitive substrings (an empty one is refused). The exit
status is 0 on success, 1 when nothing matches the filters or a file cannot be read or
written (a corrupt file in ``autotune_cache/`` is never overwritten), 2 for bad arguments.

Example:
    $ python -m cubepy.autotune export --device "cpu: AMD EPYC 7B13"
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import cache
from .config import Config


def _describe_key(key: Any) -> str:
    parts = [f"{name}={value}" for name, value in _mapping(key, "sizes").items()]
    parts += [f"{name}:{layout}" for name, layout in _mapping(key, "arrays").items()]
    return ", ".join(parts) or "(no key)"


def _mapping(data: Any, field: str) -> dict[str, Any]:
    """``data[field]`` where both are dicts, else empty: a hand-edited or damaged file is shown
    as far as it goes instead of stopping ``show`` with a traceback."""
    value = data.get(field) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _config(data: Any) -> str:
    try:
        return repr(Config.from_json(data))
    except (TypeError, ValueError):
        return repr(data)


def _timing_line(timing: Any) -> str:
    if not isinstance(timing, dict):
        return f"    (corrupt timing {timing!r})"
    median = timing.get("median_s")
    time_text = f"{median * 1e3:.4g} ms" if isinstance(median, (int, float)) else "-"
    return (f"    #{timing.get('index')} {_config(timing.get('config'))}  "
            f"{timing.get('status')}  {time_text}  {timing.get('detail') or ''}")


def _folder_note(folder: Path) -> str:
    """What is odd about a cache folder (" (a file, not a folder)"), or nothing."""
    if folder.exists() and not folder.is_dir():
        return "  (a file, not a folder: results cannot be kept; move it away)"
    return ""


def _list(args: argparse.Namespace) -> int:
    for label, folder in (("user cache", cache.user_dir()), ("shipped", cache.SHIPPED_DIR)):
        files = cache.cache_files(folder)
        print(f"{label}: {folder} ({len(files)} files){_folder_note(folder)}")
        for path, doc in files:
            if doc is None:
                print(f"  (corrupt)  {path.name}")
            else:
                print(f"  {doc['kernel']}  [{doc['device']}]  {len(doc['entries'])} entries  "
                      f"{path.name}")
    return 0


def _filters(args: argparse.Namespace) -> str:
    """``kernel 'x' and device 'y'``: the filters given, for messages."""
    parts = [f"{name} {value!r}" for name, value in (("kernel", args.kernel),
                                                      ("device", args.device)) if value]
    return " and ".join(parts)


def _nothing_matches(args: argparse.Namespace, folder: Path,
                     files: list[tuple[Path, dict[str, Any] | None]]) -> int:
    """No file matched the filters: an error (a misspelt name), saying what is there."""
    there = sorted({f"{d['kernel']} [{d['device']}]" for _, d in files if d})
    known = f"; it holds: {', '.join(there)}" if there else " (it holds no results)"
    print(f"error: nothing in {folder} matches {_filters(args)}{known}", file=sys.stderr)
    return 1


def _show(args: argparse.Namespace) -> int:
    folder = cache.SHIPPED_DIR if args.shipped else cache.user_dir()
    files = cache.cache_files(folder)
    shown = 0
    for path, doc in files:
        if doc is None:
            if not (args.kernel or args.device):
                print(f"(corrupt, ignored: {path}; `clear` removes it)")
            continue
        if not cache.matches(doc, args.kernel, args.device):
            continue
        shown += 1
        print(f"{doc['kernel']} on {doc['device']}  ({path})")
        for entry in doc["entries"].values():
            if not isinstance(entry, dict):
                print("  (corrupt entry)")
                continue
            print(f"  key {_describe_key(entry.get('key'))}: best "
                  f"{_config(entry.get('best'))}  (cubepy {entry.get('cubepy')}, tuned "
                  f"{entry.get('tuned_at')} in {entry.get('tuning_s')} s)")
            timings = entry.get("timings")
            for timing in timings if isinstance(timings, list) else []:
                print(_timing_line(timing))
    if not shown and (args.kernel or args.device):
        return _nothing_matches(args, folder, files)
    if not shown:
        print(f"no entries in {folder}{_folder_note(folder)}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    folder = cache.user_dir()
    try:
        files = cache.cache_files(folder)
        removed = cache.clear(folder, args.kernel, args.device)
    except OSError as err:
        print(f"error: cannot clear {folder}: {err}", file=sys.stderr)
        return 1
    if not removed and (args.kernel or args.device):
        return _nothing_matches(args, folder, files)
    for path in removed:
        print(f"removed {path}")
    print(f"{len(removed)} files removed from {folder}{_folder_note(folder)}")
    return 0


def _export(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else None
    try:
        written = cache.export(args.device, out, args.kernel)
    except cache.CorruptCacheFile as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # --out is a file, or a folder this user cannot write
        print(f"error: cannot write to {out or cache.SHIPPED_DIR}: {err}", file=sys.stderr)
        return 1
    if not written:
        devices = sorted({d["device"] for _, d in cache.cache_files(cache.user_dir()) if d})
        known = (f"; its devices: {', '.join(repr(d) for d in devices)}" if devices
                 else " (it is empty: tune on the device first)")
        print(f"error: no cached entries for device {args.device!r}"
              f"{f' and kernel {args.kernel!r}' if args.kernel else ''} in "
              f"{cache.user_dir()}{known}", file=sys.stderr)
        return 1
    for path in written:  # the device in full: --device matched it as a substring
        print(f"wrote {path}  [{cache.read_doc(path, warn=False)['device']}]")
    return 0


def _not_blank(text: str) -> str:
    """An argparse type: a filter that is empty or spaces matched every file (`clear ""`
    deleted them all, `export --device ""` exported any one device)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("it is empty: give part of a name")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m cubepy.autotune",
                                     description="Inspect and manage cubepy's autotune cache.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list cache files")
    show = commands.add_parser("show", help="show entries with every timing")
    show.add_argument("kernel", nargs="?", type=_not_blank)
    show.add_argument("--device", type=_not_blank)
    show.add_argument("--shipped", action="store_true", help="read autotune_cache/ instead")
    clear = commands.add_parser("clear", help="delete the user's cache files")
    clear.add_argument("kernel", nargs="?", type=_not_blank)
    clear.add_argument("--device", type=_not_blank)
    export = commands.add_parser("export", help="copy one device's entries to autotune_cache/")
    export.add_argument("--device", required=True, type=_not_blank)
    export.add_argument("--kernel", type=_not_blank)
    export.add_argument("--out", help="folder to write (default: autotune_cache/)")
    args = parser.parse_args(argv)
    handlers = {"list": _list, "show": _show, "clear": _clear, "export": _export}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
