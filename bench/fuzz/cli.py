"""The command line: options, the worker's loop over cases, the summary, and the supervisor
that restarts a worker after a crash."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import cubepy as cube

from . import __doc__ as PACKAGE_DOC
from .cases import Case, make_case, make_draw, reference
from .report import Finding, print_report, report_findings
from .run import STATE, Runner, note_state, run_one

ENTRY = Path(__file__).resolve().parent / "__main__.py"  # what a worker process runs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=PACKAGE_DOC.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--targets", default=",".join(cube.available_targets()))
    parser.add_argument("--draws", type=int, default=6)
    parser.add_argument("--minutes", type=float, default=0.0, help="stop after this long")
    parser.add_argument("--wgsl-share", type=float, default=0.4,
                        help="share of cases using only dtypes the wgsl target has")
    parser.add_argument("--shrink-seconds", type=float, default=60.0,
                        help="budget to shrink one finding")
    parser.add_argument("--shrink-total", type=float, default=900.0,
                        help="budget to shrink them all (the rest are listed unshrunk above)")
    parser.add_argument("--repros", default="", help="folder for one script per finding")
    parser.add_argument("--replay", default="",
                        help="comma-separated case seeds (as printed) to run instead")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-case", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--state", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


@dataclass
class Stats:
    """What the worker's runs so far came to, per target."""

    targets: list[str]
    clean: dict = field(init=False)
    runs: dict = field(init=False)
    checked: dict = field(init=False)
    skipped: dict = field(init=False)
    findings: list[Finding] = field(default_factory=list)
    invalid: int = 0

    def __post_init__(self) -> None:
        self.clean = {t: 0 for t in self.targets}
        self.runs = {t: 0 for t in self.targets}
        self.checked = {t: 0 for t in self.targets}
        self.skipped = {t: 0 for t in self.targets}

    def note(self, ci: int) -> None:
        note_state(event="case", case=ci, runs=self.runs, clean=self.clean,
                   skipped=self.skipped, checked=self.checked)


def run_target(runner: Runner, kernel, case: Case, draws: list, t: str, stats: Stats,
               errors_on: dict) -> None:
    """Run one case's draws on one target; record at most one finding."""
    for dr in draws:
        bad, checked, got, note = run_one(runner, kernel, case, dr, t)
        if note == "unsupported":
            stats.skipped[t] += 1
            break
        stats.runs[t] += 1
        stats.checked[t] += checked
        if not bad:
            stats.clean[t] += 1
            continue
        if note:
            errors_on[t] = (note, dr)
            break
        index, klass = bad[0]
        res, valid = reference(case, dr)
        size = len(got) - 5
        exp = res.val[valid][:size]
        stats.findings.append(Finding(t, klass, case, dr, f"{len(bad)} elements",
                                      exp[min(index, size - 1)] if size else None,
                                      got[index] if index < len(got) else None))
        stats.findings[-1].small = str(index)
        break  # one finding per (case, target)


def run_case(runner: Runner, args: argparse.Namespace, targets: list[str], seed: int,
             stats: Stats) -> None:
    """Compile one random case and run it on every target."""
    case = make_case(seed, args.wgsl_share)
    try:
        kernel = runner.compile(case)
    except Exception:  # noqa: BLE001
        stats.invalid += 1
        return
    drng = np.random.default_rng(seed + 7)
    draws = [make_draw(case, drng) for _ in range(args.draws)]
    errors_on: dict = {}
    for t in targets:
        if not runner.supports(case, t):
            stats.skipped[t] += 1
            continue
        run_target(runner, kernel, case, draws, t, stats, errors_on)
    if errors_on and len(errors_on) == len([t for t in targets if runner.supports(case, t)]):
        stats.invalid += 1  # every target refused: the generator broke a rule (not a finding)
        if args.verbose:
            print("invalid on all targets:", next(iter(errors_on.values()))[0][:300])
    else:
        for t, (note, dr) in errors_on.items():
            stats.findings.append(Finding(t, "error", case, dr, note, None, None, "0"))


def print_summary(ci: int, runner: Runner, stats: Stats, start: float,
                  reports: list[tuple]) -> None:
    print("\n================ summary ================")
    print(f"cases: {ci + 1}, kernels compiled {runner.count}, invalid (generator) "
          f"{stats.invalid}, {time.time() - start:.0f}s")
    for t in stats.targets:
        print(f"{t:10s} runs {stats.runs[t]:5d} clean {stats.clean[t]:5d} elements checked "
              f"{stats.checked[t]:8d}, cases skipped (dtypes) {stats.skipped[t]}")
    print(f"\n{len(reports)} distinct findings")
    for report in reports:
        print_report(report)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.worker:
        return supervise(args, sys.argv[1:] if argv is None else argv)
    return work(args)


def work(args: argparse.Namespace) -> int:
    """The worker: fuzz the cases from --first-case on, then shrink and report the findings."""
    STATE.append(open(args.state, "a"))  # noqa: SIM115 - kept open for the whole run
    targets = [t for t in args.targets.split(",") if t]
    workdir = Path(tempfile.mkdtemp(prefix="cubepy-fuzz-"))
    sys.path.insert(0, str(workdir))
    runner = Runner(targets, workdir)
    stats = Stats(targets)
    start = time.time()
    ci = args.first_case
    replay = [int(x) for x in args.replay.split(",") if x]
    last_case = len(replay) if replay else args.cases
    for ci in range(args.first_case, last_case):
        if args.minutes and time.time() - start > args.minutes * 60:
            break
        stats.note(ci)
        seed = replay[ci] if replay else args.seed * 1_000_003 + ci
        run_case(runner, args, targets, seed, stats)
        if args.verbose or ci % 20 == 0:
            print(f"[{time.time() - start:7.1f}s] case {ci}: runs {sum(stats.runs.values())}, "
                  f"findings {len(stats.findings)}, invalid {stats.invalid}", flush=True)
    stats.note(ci + 1)
    note_state(event="shrink")
    for f in stats.findings:
        print(f"\nfound (before shrinking): {f.target} [{f.klass}] seed {f.case.seed} "
              f"{f.note[:300]}\n{f.case.source.split('@cube.kernel', 1)[1]}", flush=True)
    reports = report_findings(runner, stats.findings, targets, args)
    print_summary(ci, runner, stats, start, reports)
    return 1 if reports else 0


def print_crashes(crashes: list[dict], earlier: list[dict]) -> None:
    print("\nruns of the workers that crashed (add to the summary above):")
    for key in ("runs", "clean", "skipped", "checked"):
        total = {t: sum(e[key].get(t, 0) for e in earlier) for t in earlier[0][key]} \
            if earlier else {}
        print(f"  {key}: {total}")
    print(f"\n{len(crashes)} worker crashes (process killed by a signal):")
    for c in crashes:
        print(f"--- {c.get('target')} seed {c.get('seed')}\n{c.get('source', '')}")


def supervise(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the fuzzing in worker processes, one at a time: a kernel that kills its process
    (a segfault) is reported as a crash, and a new worker goes on with the next case."""
    state = Path(tempfile.mkdtemp(prefix="cubepy-fuzz-state-")) / "state.jsonl"
    first, crashes, status, earlier = 0, [], 0, []
    start = time.time()
    while True:
        minutes = max(0.1, args.minutes - (time.time() - start) / 60) if args.minutes else 0
        state.write_text("")
        cmd = [sys.executable, str(ENTRY), *argv, "--worker",
               "--first-case", str(first), "--state", str(state), "--minutes", str(minutes)]
        proc = subprocess.run(cmd)
        events = [json.loads(line) for line in state.read_text().splitlines() if line]
        status = max(status, proc.returncode if proc.returncode > 0 else 0)
        if proc.returncode >= 0 or not events:
            break
        last = events[-1]
        cases = [e for e in events if e["event"] == "case"]
        print(f"\n!!! worker died with signal {-proc.returncode} during "
              f"{json.dumps(last)[:3000]}", flush=True)
        crashes.append(last)
        if cases:
            earlier.append({k: cases[-1][k] for k in ("runs", "clean", "skipped", "checked")})
        if last["event"] != "launch" or not cases or any(e["event"] == "shrink" for e in events):
            break
        first = cases[-1]["case"] + 1
        if args.minutes and time.time() - start > args.minutes * 60:
            break
    if crashes:
        print_crashes(crashes, earlier)
    return 1 if crashes else status
