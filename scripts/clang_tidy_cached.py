#!/usr/bin/env python3
"""clang-tidy over src/*.cc with a result cache: a translation unit whose inputs are unchanged
since it last passed is not analysed again.

A file's key is the SHA-256 of everything its analysis depends on: the clang-tidy version, the
.clang-tidy configuration, the file's compile command (with the build tree's path cut out), and the
bytes of every file the compiler reads for it (the source and all headers, system headers included,
as `c++ -M` lists them). Only passing results are stored, so a file with findings is analysed (and
reported) on every run. A cold cache analyses every file; a warm one, the files a change touches.

usage: clang_tidy_cached.py BUILD_DIR (FILE... | --all --cover SOURCE...) [--jobs N] [--cache DIR]
The compile commands come from BUILD_DIR/compile_commands.json; FILE... picks entries, --all takes
every one (the `tidy` preset: one per unity batch, ISA files alone), and --cover checks that each
SOURCE is an entry or included by a unity batch (so no source escapes). Unity batches are analysed
with bugprone-suspicious-include off (they include .cc files by design) and the repository's
.clang-tidy (the batch lives in the build tree); findings name the source file. A translation unit
fails when clang-tidy exits non-zero, whatever it printed.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys


def entry_args(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def depends(entry, args):
    """The files the compiler reads for this entry (source first), from `c++ -M`."""
    cmd = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        cmd.append(a)
    cmd += ["-M", "-MG"]
    out = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    text = out.stdout.replace("\\\n", " ")
    paths = text.split(":", 1)[1].split() if ":" in text else []
    return [os.path.normpath(os.path.join(entry["directory"], p)) for p in paths]


def key_of(entry, args, salt, build_dir):
    deps = depends(entry, args)
    if deps is None:
        return None
    h = hashlib.sha256(salt + os.path.basename(entry["file"]).startswith("unity_").to_bytes(1, "little"))
    h.update(" ".join(a.replace(build_dir, "<build>") for a in args).encode())
    for p in sorted(set(deps)):
        h.update(p.encode())
        try:
            with open(p, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--all", action="store_true", help="every entry of the compile commands")
    ap.add_argument("--cover", nargs="*", default=[],
                    help="sources that must be an entry or in a unity batch (with --all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--cache", default=os.environ.get(
        "DEEPINFER_TIDY_CACHE", os.path.expanduser("~/.cache/deepinfer/clang-tidy")))
    ap.add_argument("--clang-tidy", default="clang-tidy")
    opt = ap.parse_args()

    build_dir = os.path.abspath(opt.build_dir)
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        db = {os.path.normpath(e["file"]): e for e in json.load(f)}
    version = subprocess.run([opt.clang_tidy, "--version"], capture_output=True).stdout
    config = os.path.abspath(".clang-tidy")
    with open(config, "rb") as f:
        salt = version + f.read()

    files = list(db) if opt.all else opt.files
    if opt.all and opt.cover:
        covered = set(db)
        for path in db:
            if os.path.basename(path).startswith("unity_"):
                with open(path) as f:
                    covered.update(os.path.normpath(line.split('"')[1]) for line in f
                                   if line.startswith("#include \""))
        left = [p for p in opt.cover if os.path.normpath(os.path.abspath(p)) not in covered]
        if left:
            print("clang-tidy: in no translation unit of %s: %s" % (build_dir, " ".join(left)),
                  file=sys.stderr)
            return 1
    entries, missing = [], []
    for path in files:
        e = db.get(os.path.normpath(os.path.abspath(path)))
        if e is None:
            missing.append(path)
            continue
        entries.append((path, e, entry_args(e)))
    if missing:
        print("clang-tidy: not in %s/compile_commands.json: %s" % (build_dir, " ".join(missing)),
              file=sys.stderr)
        return 1
    os.makedirs(opt.cache, exist_ok=True)

    def run_one(item):
        """(cache hit, passed, what to report) for one file."""
        path, e, args = item
        key = key_of(e, args, salt, build_dir)
        stamp = os.path.join(opt.cache, key) if key else None
        if stamp and os.path.exists(stamp):
            return True, True, ""
        cmd = [opt.clang_tidy, "-p", build_dir, "--quiet", "--config-file=" + config]
        if os.path.basename(e["file"]).startswith("unity_"):
            cmd.append("--checks=-bugprone-suspicious-include")
        r = subprocess.run(cmd + [e["file"]], capture_output=True, text=True)
        if r.returncode != 0:
            return False, False, "%s%s(clang-tidy exited %d on %s)\n" % (
                r.stdout, r.stderr, r.returncode, path)
        if stamp:
            with open(stamp, "w") as f:
                f.write(path + "\n")
        return False, True, ""

    cached = failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=opt.jobs) as pool:
        for hit, passed, report in pool.map(run_one, entries):
            cached += hit
            if not passed:
                failed += 1
                sys.stdout.write(report)
    print("clang-tidy: %d translation units, %d analysed, %d unchanged since they passed (cache %s)%s" %
          (len(entries), len(entries) - cached, cached, opt.cache,
           ", %d with findings" % failed if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
