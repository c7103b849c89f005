#!/usr/bin/env python3
"""Pinned installs of the real host CLIs into one cache folder.

    python3 tests/e2e/install.py [HOST ...]     # default: all of them, in parallel

The cache folder is STS_E2E_CACHE (default ~/.cache/sts-e2e).  Each host lives
in <cache>/<host>-<version>/ and is reused when its stamp file says the
install finished.  A fresh install goes into a temporary sibling folder that
is renamed into place only after it succeeded, so a crash never leaves a
half-install that looks finished.  npm and pip keep their download caches
inside the cache folder too, so deleting it gives a truly cold install.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

# host -> (kind, packages to install, version shown in reports, binary inside the folder)
PINS = {
    "codex": ("npm", ["@openai/codex@0.171.0"], "0.171.0", "node_modules/.bin/codex"),
    "claude": ("npm", ["@anthropic-ai/claude-code@2.1.332"], "2.1.332", "node_modules/.bin/claude"),
    "opencode": ("npm", ["opencode-ai@1.18.33"], "1.18.33", "node_modules/.bin/opencode"),
    "pi": ("npm", ["@mariozechner/pi-coding-agent@0.73.1"], "0.73.1", "node_modules/.bin/pi"),
    "omp": ("npm", ["@oh-my-pi/pi-coding-agent@18.2.3", "bun@1.4.5"], "18.2.3", "node_modules/.bin/omp"),
    "hermes": ("pip", ["hermes-agent==0.19.0"], "0.19.0", "venv/bin/hermes"),
    "gemini": ("npm", ["@google/gemini-cli@0.61.0"], "0.61.0", "node_modules/.bin/gemini"),
    "copilot": ("npm", ["@github/copilot@1.0.102"], "1.0.102", "node_modules/.bin/copilot"),
    "qwen": ("npm", ["@qwen-code/qwen-code@0.24.4"], "0.24.4", "node_modules/.bin/qwen"),
    # The wrapper names no platform package that exists for 0.225.1: the binary is 0.225.2's.
    "droid": ("npm", ["@factory/cli-linux-x64@0.225.2", "@factory/cli@0.225.1"], "0.225.2",
              "node_modules/@factory/cli-linux-x64/bin/droid"),
    # 7.8.1's linux binary package is missing from the registry.
    "kilo": ("npm", ["@kilocode/cli@7.7.7"], "7.7.7", "node_modules/.bin/kilo"),
    # The SDK-based 3.x line; its binary comes in the @cline/cli-linux-x64 package.
    "cline": ("npm", ["cline@3.0.65"], "3.0.65", "node_modules/.bin/cline"),
    # Needs Python 3.12 or later (see PYTHONS and BUILT_PYTHON).
    "vibe": ("pip", ["mistral-vibe==3.0.2"], "3.0.2", "venv/bin/vibe"),
}
# Hosts whose package needs a newer Python than the one running the tests.
PYTHONS: dict = {"vibe": ("python3.13", "python3.12")}
# When no such Python is on the machine, one is built once from Debian's own
# source package (Debian's archive is reachable where python.org is not):
# (version, tarball URL, its sha256).  It goes into ~/.pyenv/versions/<version>,
# where the search for an installed one finds it the next time.
BUILT_PYTHON = ("3.13.5",
                "http://deb.debian.org/debian/pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz",
                "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640")
HOSTS = list(PINS)
INSTALL_TIMEOUT = int(os.environ.get("STS_E2E_INSTALL_TIMEOUT", "900"))


class InstallError(RuntimeError):
    """A host could not be installed; its cases fail with this message."""


def cache_root() -> str:
    return os.path.abspath(os.path.expanduser(
        os.environ.get("STS_E2E_CACHE") or "~/.cache/sts-e2e"))


def host_dir(host: str) -> str:
    return os.path.join(cache_root(), "%s-%s" % (host, PINS[host][2]))


def binary(host: str) -> str:
    return os.path.join(host_dir(host), PINS[host][3])


def bin_dir(host: str) -> str:
    """Folder to put first on PATH (OMP needs `bun` from there)."""
    return os.path.dirname(binary(host))


def _stamp(folder: str) -> str:
    return os.path.join(folder, "sts-e2e-installed.json")


def installed_version(host: str):
    """The version the installed package itself declares (None if unreadable)."""
    kind, packages = PINS[host][0], PINS[host][1]
    folder = host_dir(host)
    if kind == "npm":
        name = packages[0].rsplit("@", 1)[0]
        try:
            with open(os.path.join(folder, "node_modules", name, "package.json")) as fh:
                return json.load(fh).get("version")
        except (OSError, ValueError):
            return None
    name = packages[0].split("==")[0].replace("-", "_").lower()
    import glob
    for meta in glob.glob(os.path.join(folder, "venv", "lib", "python*", "site-packages",
                                       "*.dist-info", "METADATA")):
        if os.path.basename(os.path.dirname(meta)).lower().startswith(name + "-"):
            with open(meta, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    return None


def installed(host: str) -> bool:
    folder = host_dir(host)
    try:
        with open(_stamp(folder)) as fh:
            stamp = json.load(fh)
    except (OSError, ValueError):
        return False
    return (stamp.get("packages") == PINS[host][1] and os.access(binary(host), os.X_OK)
            and installed_version(host) == PINS[host][2])


def _run(cmd, log, env=None):
    with open(log, "ab") as out:
        out.write(("$ %s\n" % " ".join(cmd)).encode())
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              env=env, timeout=INSTALL_TIMEOUT)
    if proc.returncode != 0:
        with open(log, "rb") as fh:
            tail = fh.read()[-3000:].decode("utf-8", "replace")
        raise InstallError("%s exited %d; log %s:\n%s" % (cmd[0], proc.returncode, log, tail))


def install(host: str) -> dict:
    """Install one host unless present.  Returns {host, version, seconds, cached}."""
    version = PINS[host][2]
    if installed(host):
        return {"host": host, "version": version, "seconds": 0.0, "cached": True}
    root = cache_root()
    os.makedirs(root, exist_ok=True)
    import fcntl
    # One installer per host at a time, also across concurrent test sessions.
    with open(os.path.join(root, "%s.lock" % host), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(host):
            return {"host": host, "version": version, "seconds": 0.0, "cached": True}
        return _install_locked(host, root)


def _install_locked(host: str, root: str) -> dict:
    kind, packages, version, _ = PINS[host]
    folder = host_dir(host)
    tmp = "%s.tmp-%d" % (folder, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    log = os.path.join(root, "install-%s.log" % host)
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ)
    t0 = time.monotonic()
    try:
        if kind == "npm":
            with open(os.path.join(tmp, "package.json"), "w") as fh:
                json.dump({"name": "sts-e2e-%s" % host, "private": True}, fh)
            env["npm_config_cache"] = os.path.join(root, "npm-cache")
            _run(["npm", "install", "--prefix", tmp, "--no-audit", "--no-fund",
                  "--loglevel", "error"] + packages, log, env)
        else:
            _run([_python_for(host), "-m", "venv", os.path.join(tmp, "venv")], log, env)
            env["PIP_CACHE_DIR"] = os.path.join(root, "pip-cache")
            _run([os.path.join(tmp, "venv", "bin", "python"), "-m", "pip", "install",
                  "--quiet", "--disable-pip-version-check"] + packages, log, env)
        # venv scripts carry the absolute interpreter path: rebuild them in place
        # after the rename would be fragile, so venv hosts are renamed, then fixed.
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
        if kind == "pip":
            _fix_venv_paths(tmp, folder)
        if not os.access(binary(host), os.X_OK):
            raise InstallError("%s: %s missing after install" % (host, binary(host)))
        if installed_version(host) != version:
            raise InstallError("%s: installed version %s, pinned %s"
                               % (host, installed_version(host), version))
        with open(_stamp(folder), "w") as fh:
            json.dump({"packages": packages, "version": version,
                       "seconds": round(time.monotonic() - t0, 1)}, fh)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InstallError("%s: install ran past %d s; log %s" % (host, INSTALL_TIMEOUT, log))
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"host": host, "version": version, "seconds": round(time.monotonic() - t0, 1),
            "cached": False}


def _python_for(host: str) -> str:
    """The interpreter a pip host's venv is made with: an installed one of
    the versions the host needs, or else one built from Debian's source."""
    if host not in PYTHONS:
        return sys.executable
    return _installed_python(PYTHONS[host]) or _build_python(PYTHONS[host])


def _installed_python(names) -> str:
    import glob
    for name in names:
        version = name[len("python"):]
        for found in [shutil.which(name)] + sorted(glob.glob(os.path.expanduser(
                "~/.pyenv/versions/%s*/bin/%s" % (version, name))), reverse=True):
            # (a pyenv shim exists for every version but runs only the active one;
            # a Python without ssl cannot run pip)
            if found and subprocess.run([found, "-c", "import ssl, sqlite3"],
                                        capture_output=True).returncode == 0:
                return found
    return ""


def _build_python(names) -> str:
    """Build BUILT_PYTHON into ~/.pyenv/versions/<version> (once: a second
    call finds it installed).  It needs a C compiler and the -dev packages
    of ssl, zlib, ffi, sqlite, bz2, lzma, readline, ncurses and uuid."""
    import fcntl
    import hashlib
    import tarfile
    import tempfile
    import urllib.request
    version, url, digest = BUILT_PYTHON
    prefix = os.path.expanduser("~/.pyenv/versions/%s" % version)
    root = cache_root()
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "python-build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _installed_python(names)
        if found:
            return found
        tarball = os.path.join(root, os.path.basename(url))
        if not os.path.exists(tarball):
            urllib.request.urlretrieve(url, tarball + ".part")
            os.rename(tarball + ".part", tarball)
        with open(tarball, "rb") as fh:
            if hashlib.sha256(fh.read()).hexdigest() != digest:
                os.remove(tarball)
                raise InstallError("%s: sha256 is not %s" % (tarball, digest))
        log = os.path.join(root, "install-python-%s.log" % version)
        build = tempfile.mkdtemp(prefix="sts-e2e-python-")
        try:
            with tarfile.open(tarball) as tar:
                tar.extractall(build)
            (source,) = [os.path.join(build, d) for d in os.listdir(build)]
            jobs = str(max(1, min(4, os.cpu_count() or 1)))
            for cmd in (["./configure", "--prefix=" + prefix], ["make", "-j" + jobs],
                        ["make", "install"]):
                with open(log, "ab") as out:
                    out.write(("$ %s\n" % " ".join(cmd)).encode())
                    proc = subprocess.run(cmd, cwd=source, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, timeout=3 * INSTALL_TIMEOUT)
                if proc.returncode != 0:
                    raise InstallError("building Python %s: %s exited %d; log %s"
                                       % (version, cmd[0], proc.returncode, log))
        finally:
            shutil.rmtree(build, ignore_errors=True)
        found = _installed_python(names)
        if not found:
            raise InstallError("Python %s built into %s but does not run (ssl or sqlite "
                               "missing?); log %s" % (version, prefix, log))
        return found


def _fix_venv_paths(old: str, new: str) -> None:
    """A venv records its own absolute path in scripts and pyvenv.cfg; rewrite it."""
    vbin = os.path.join(new, "venv", "bin")
    for name in os.listdir(vbin):
        path = os.path.join(vbin, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        if old.encode() in data:
            with open(path, "wb") as fh:
                fh.write(data.replace(old.encode(), new.encode()))
    cfg = os.path.join(new, "venv", "pyvenv.cfg")
    if os.path.exists(cfg):
        with open(cfg) as fh:
            text = fh.read()
        with open(cfg, "w") as fh:
            fh.write(text.replace(old, new))


def install_all(hosts, workers: int = 3) -> dict:
    """Install hosts in parallel.  Returns host -> result dict or InstallError."""
    out = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futs = {pool.submit(install, h): h for h in hosts}
        for fut in concurrent.futures.as_completed(futs):
            host = futs[fut]
            try:
                out[host] = fut.result()
            except Exception as exc:  # noqa: BLE001 - reported per host
                out[host] = exc if isinstance(exc, InstallError) else InstallError(
                    "%s: %s: %s" % (host, type(exc).__name__, exc))
    return out


def main(argv=None) -> int:
    hosts = (argv if argv is not None else sys.argv[1:]) or HOSTS
    bad = [h for h in hosts if h not in PINS]
    if bad:
        sys.stderr.write("unknown host(s): %s; known: %s\n" % (", ".join(bad), ", ".join(HOSTS)))
        return 2
    t0 = time.monotonic()
    results = install_all(hosts)
    failed = 0
    for host in hosts:
        r = results[host]
        if isinstance(r, Exception):
            failed += 1
            print("FAIL install %-8s %s" % (host, r))
        else:
            print("OK   install %-8s %-8s %6.1fs%s" % (host, r["version"], r["seconds"],
                                                        " (cached)" if r["cached"] else ""))
    print("install wall time %.1fs, cache %s" % (time.monotonic() - t0, cache_root()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
