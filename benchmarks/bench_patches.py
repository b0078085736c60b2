"""Each in-process runtime patch against Beam's own code, side by side in one sitting (issue #50).

    .venv/bin/python -m benchmarks.bench_patches --config bench50k --work /tmp/bp --reps 2
    .venv/bin/python -m benchmarks.bench_patches --arms all,none --reps 3 --small_reps 5

Arms: `all` (every patch on, the default), one arm per patch with only that patch off
(`-NAME`; `-A+B` switches A and B off together), and `none` (every patch off: Beam's own
code). A patch is switched off by the
environment variable BEAMCRAWL_PATCHES_OFF (a comma list of names, or `all`), which
`pipelines.patches` reads. For each repetition every arm runs (a) a whole crawl of the
nginx export (`benchmarks.realweb`'s beamcrawl commands: inject, then crawl until empty)
and (b) a `--small_pages` round on a copy of a committed base crawl; the arms' order is
reversed on every other repetition so that a drift of the machine's pace spreads over all
of them. Per arm: wall and CPU seconds of the whole process tree, and the tree's peak PSS,
as medians; then each arm's change against `all` in %. Timings here are noisy: read the
ratios of one sitting, and only gains well above the spread between repetitions.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.realweb.analyse import RobotsRules, analyse, read_access_log
from benchmarks.realweb.nginx import Nginx
from benchmarks.realweb.run import beamcrawl_cmds, measure

REPO = Path(__file__).resolve().parents[1]


def _patch_names():
    sys.path.insert(0, str(REPO))
    from pipelines.patches import PATCHES, TUNING
    return list(PATCHES + TUNING)


def _export(a) -> Path:
    export = a.work / f"export-{a.config}-{a.seed}-{a.port}"
    if not (export / "manifest.json").exists():
        subprocess.run([sys.executable, "-m", "tests.simweb", "static", "--config", a.config, "--seed",
                        str(a.seed), "--port", str(a.port), "--out", str(export)],
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    return export


def _env(arm):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BEAMCRAWL_PATCHES_OFF", None)
    if arm == "none":
        env["BEAMCRAWL_PATCHES_OFF"] = "all"
    elif arm.startswith("-"):   # -NAME, or -NAME+NAME+...: those off together
        env["BEAMCRAWL_PATCHES_OFF"] = arm[1:].replace("+", ",")
    return env


def whole_crawl(a, export, arm, reachable, robots) -> dict:
    cmds = beamcrawl_cmds(a, export, a.work)
    with Nginx(export, a.port, a.work / "nginx-patches", workers=1) as ng:
        m = measure(cmds, REPO, _env(arm), a.work / f"crawl{arm}.log")
    res = analyse(read_access_log(ng.access_log), reachable, robots, a.port)
    m.update(pages=res["pages"], coverage=res["coverage"], repeats=res["duplicate_fetches"])
    return m


def small_base(a, export) -> Path:
    """A committed crawl of one `small_pages` round to start every small round from."""
    base = a.work / "small-base"
    if not (base / "rounds").exists():
        shutil.rmtree(base, ignore_errors=True)
        inject, _ = beamcrawl_cmds(a, export, a.work, a.small_pages)
        inject = [str(x) for x in inject]
        inject[inject.index("--crawl_dir") + 1] = str(base)
        with Nginx(export, a.port, a.work / "nginx-small", workers=1):
            subprocess.run(inject, cwd=REPO, env=_env("all"), check=True, capture_output=True)
            subprocess.run([a.python, "-m", "pipelines.round", "--crawl_dir", str(base)], cwd=REPO,
                           env=_env("all"), check=True, capture_output=True)
    return base


def small_round(a, export, base, arm) -> dict:
    copy = a.work / "small-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(base, copy)
    cmd = [a.python, "-m", "pipelines.round", "--crawl_dir", copy]
    with Nginx(export, a.port, a.work / "nginx-small", workers=1):
        return measure([cmd], REPO, _env(arm), a.work / f"small{arm}.log")


def summary(runs: dict) -> dict:
    return {arm: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "peak_pss_mb")}
            for arm, rs in runs.items() if rs}


def table(title, med) -> str:
    ref = med.get("all")
    out = [f"### {title}", "", "| arm | wall s | CPU s | peak PSS MB | wall vs all | CPU vs all | PSS vs all |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for arm, m in med.items():
        rel = [f"{100 * (m[k] / ref[k] - 1):+.1f} %" if ref else "" for k in ("wall", "cpu", "peak_pss_mb")]
        out.append(f"| {arm} | {m['wall']:.2f} | {m['cpu']:.2f} | {m['peak_pss_mb']:.0f} | " + " | ".join(rel) + " |")
    return "\n".join(out)


def paired(a, export, base, arms, reachable, robots) -> int:
    """Each arm beside `all`: per pair the ratios arm / all; medians of the pairs."""
    keys = ("wall", "cpu", "peak_pss_mb")
    ratios = {kind: {arm: [] for arm in arms} for kind in ("crawl", "small")}
    for rep in range(a.reps):
        for arm in arms:
            order = ("all", arm) if rep % 2 == 0 else (arm, "all")
            for _ in range(a.small_reps):
                got = {x: small_round(a, export, base, x) for x in order}
                ratios["small"][arm].append({k: got[arm][k] / got["all"][k] for k in keys})
            if not a.no_crawl:
                got = {x: whole_crawl(a, export, x, reachable, robots) for x in order}
                ratios["crawl"][arm].append({k: got[arm][k] / got["all"][k] for k in keys})
                print(f"{time.strftime('%H:%M:%S')} rep {rep} {arm}: crawl {got[arm]['wall']:.1f} s against "
                      f"{got['all']['wall']:.1f} s ({got[arm]['pages']} / {got['all']['pages']} pages, repeats "
                      f"{got[arm]['repeats']} / {got['all']['repeats']})", flush=True)
            (a.work / "bench_patches_paired.json").write_text(json.dumps(ratios, indent=1))
    for kind in ("crawl", "small") if not a.no_crawl else ("small",):
        n = len(next(iter(ratios[kind].values())))
        if not n:
            continue
        print(f"### {kind}: arm / all, median of {n} pairs (min-max)", "",
              "| arm | wall | CPU | peak PSS |", "| --- | --- | --- | --- |", sep="\n")
        for arm, rs in ratios[kind].items():
            cells = []
            for k in keys:
                v = sorted(r[k] for r in rs)
                cells.append(f"{100 * (statistics.median(v) - 1):+.1f} % ({100 * (v[0] - 1):+.1f}..{100 * (v[-1] - 1):+.1f})")
            print(f"| {arm} | " + " | ".join(cells) + " |")
        print()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_patches", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="bench50k")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_patches"))
    ap.add_argument("--python", default=str(REPO / ".venv/bin/python"))
    ap.add_argument("--arms", default="", help="comma list (all, none, -NAME); default: all, each patch off, none")
    ap.add_argument("--reps", type=int, default=2, help="whole crawls per arm")
    ap.add_argument("--small_reps", type=int, default=4, help="small rounds per arm and repetition")
    ap.add_argument("--small_pages", type=int, default=100)
    ap.add_argument("--no_crawl", action="store_true", help="small rounds only")
    ap.add_argument("--round_pages", type=int, default=5000)
    ap.add_argument("--paired", action="store_true",
                    help="each arm right beside a run of `all` (order alternating), figures as the median "
                         "ratio of the pairs: for a machine whose pace drifts within a sitting")
    a = ap.parse_args(argv)
    # what benchmarks.realweb.run's beamcrawl commands read
    a.fetch_threads, a.conns, a.store, a.beamcrawl_args = 32, 1, "none", []
    a.work.mkdir(parents=True, exist_ok=True)
    arms = a.arms.split(",") if a.arms else ["all"] + [f"-{n}" for n in _patch_names()] + ["none"]
    export = _export(a)
    reachable = set((export / "reachable.txt").read_text().split())
    robots = RobotsRules.from_export(export)
    base = small_base(a, export)
    if a.paired:
        return paired(a, export, base, [x for x in arms if x != "all"], reachable, robots)
    crawls, smalls = {arm: [] for arm in arms}, {arm: [] for arm in arms}
    for rep in range(a.reps):
        for arm in (arms if rep % 2 == 0 else arms[::-1]):
            for _ in range(a.small_reps):
                smalls[arm].append(small_round(a, export, base, arm))
            if not a.no_crawl:
                r = whole_crawl(a, export, arm, reachable, robots)
                crawls[arm].append(r)
                (a.work / "bench_patches.json").write_text(json.dumps({"crawls": crawls, "smalls": smalls}, indent=1))
                print(f"{time.strftime('%H:%M:%S')} rep {rep} {arm}: crawl {r['wall']:.1f} s, cpu {r['cpu']:.1f} s, "
                      f"PSS {r['peak_pss_mb']:.0f} MB, {r['pages']} pages, coverage {r['coverage']:.4f}, "
                      f"repeats {r['repeats']}; small round {smalls[arm][-1]['wall']:.2f} s", flush=True)
    (a.work / "bench_patches.json").write_text(json.dumps({"crawls": crawls, "smalls": smalls}, indent=1))
    if not a.no_crawl:
        print(table(f"Whole crawls of {a.config} (rounds of {a.round_pages}; medians of {a.reps})", summary(crawls)))
        print()
    print(table(f"Rounds of {a.small_pages} pages (medians of {a.reps * a.small_reps})", summary(smalls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
