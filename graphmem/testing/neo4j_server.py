"""Start a real Neo4j 5.26 Community server for tests, CI and benchmarks.

No Docker is needed: a tiny Java launcher (``neo4j_launcher/``) runs Neo4j's
embedded DBMS with the Bolt connector on ``127.0.0.1``. Its classpath comes
from Maven Central (``org.neo4j:neo4j``, see ``neo4j_launcher/pom.xml``) and
is resolved and compiled once into a cache directory, so later starts spend
no time in Maven.

Typical use::

    from graphmem.testing.neo4j_server import LocalNeo4j

    with LocalNeo4j() as server:
        driver = neo4j.GraphDatabase.driver(server.uri, auth=server.auth)

or, for the test-suite fixture order (``NEO4J_URI`` -> Docker ->
local launcher -> nothing)::

    target = resolve_test_neo4j()
    if target.uri is None:
        pytest.skip(target.reason)
    ...
    target.close()

From a shell: ``python -m graphmem.testing.neo4j_server`` prints the URI and
serves until Ctrl-C / SIGTERM.

Environment variables:

``GRAPHMEM_NEO4J_CACHE``
    cache root for the built launcher (default
    ``~/.cache/graphmem/neo4j-launcher``).
``GRAPHMEM_NEO4J_HEAP``
    JVM heap: either a max size (``1g``) or explicit flags
    (``-Xms256m -Xmx1g``, the default).
``GRAPHMEM_NEO4J_PAGECACHE``
    Neo4j page cache size (default ``512m``).
``GRAPHMEM_NEO4J_JAVA_OPTS``
    extra JVM flags, appended.
``GRAPHMEM_NEO4J_START_TIMEOUT``
    seconds to wait for Bolt (default 180).
``GRAPHMEM_NEO4J_KEEP``
    ``1`` keeps the temporary directory (data and logs) after ``stop()``.
``GRAPHMEM_NEO4J_CDS``
    ``0`` disables the JVM class-data-sharing archive. By default the first
    server started with a given build dumps one when it stops cleanly (a few
    seconds, once), and later starts map it: about 30% less CPU to start.

Importing this module does no I/O.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import fcntl
import hashlib
import importlib
import json
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

__all__ = [
    "DEFAULT_AUTH",
    "DOCKER_IMAGE",
    "NEO4J_VERSION",
    "LauncherBuild",
    "LocalNeo4j",
    "Neo4jLaunchError",
    "Neo4jTarget",
    "available",
    "build_launcher",
    "docker_available",
    "java_processes",
    "main",
    "resolve_test_neo4j",
]

log = logging.getLogger(__name__)

#: Keep in sync with ``<neo4j.version>`` in ``neo4j_launcher/pom.xml``.
NEO4J_VERSION = "5.26.31"
#: Image used when Docker is available (via testcontainers).
DOCKER_IMAGE = "neo4j:5.26-community"
#: Default credentials: what docker-compose.yml sets up, the default for
#: ``NEO4J_URI`` without ``NEO4J_PASSWORD``, and what the local launcher
#: hands out (its auth is disabled, so any credentials, or none, work).
DEFAULT_AUTH: tuple[str, str] = ("neo4j", "graphmem-local")

DEFAULT_HEAP = "-Xms256m -Xmx1g"
DEFAULT_PAGECACHE = "512m"
DEFAULT_START_TIMEOUT = 180.0
DEFAULT_STOP_TIMEOUT = 60.0
#: stop timeout while the JVM also writes its class-data-sharing archive
CDS_DUMP_STOP_TIMEOUT = 180.0
MAVEN_TIMEOUT = 1800.0

_BUILD_FORMAT = "graphmem-neo4j-launcher/2"
_LAUNCHER_DIR = Path(__file__).resolve().with_name("neo4j_launcher")
_POM = _LAUNCHER_DIR / "pom.xml"
_SOURCE = _LAUNCHER_DIR / "src" / "main" / "java" / "graphmem" / "launcher" / "Launcher.java"
_MAIN_CLASS = "graphmem.launcher.Launcher"
_READY_RE = re.compile(r"^READY (\d+)\s*$", re.MULTILINE)

#: JVM flags, after Neo4j 5's own neo4j.conf defaults. The ``--add-opens``
#: are not strictly required on Java 17, but without them Neo4j falls back
#: to slower page-cache buffer handling and logs warnings (no reflective
#: access to DirectByteBuffer / file descriptors).
JVM_FLAGS: tuple[str, ...] = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
)


class Neo4jLaunchError(RuntimeError):
    """Building or starting the local Neo4j failed."""


# --------------------------------------------------------------------------
# Environment checks
# --------------------------------------------------------------------------


def _java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2) is not None:  # "1.8.0_x"
        major = int(m.group(2))
    return major


def available() -> tuple[bool, str]:
    """Whether the local launcher can run here: ``java`` (>= 17), ``javac``
    and ``mvn`` on PATH. Returns ``(ok, reason)``; reason explains a no."""
    missing = [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]
    if missing:
        return False, f"local Neo4j launcher needs {', '.join(missing)} on PATH (Java 17+ JDK and Maven)"
    java = shutil.which("java")
    assert java is not None
    major = _java_major(java)
    if major is None:
        return False, "could not determine the Java version from `java -version`"
    if major < 17:
        return False, f"Neo4j 5.26 needs Java 17 or 21; `java` is Java {major}"
    return True, f"java {major}, javac and mvn found"


def docker_available(timeout: float = 5.0) -> bool:
    """Whether a Docker engine answers (``docker info`` succeeds in time)."""
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        res = subprocess.run(
            [docker, "info"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


# --------------------------------------------------------------------------
# Building the launcher (Maven classpath + javac), cached
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LauncherBuild:
    """A compiled launcher: its cache directory and full runtime classpath."""

    directory: Path
    classpath: str
    #: seconds spent building now; 0.0 when the cache was used
    build_seconds: float
    #: identifies the exact jars on the classpath (paths, sizes, mtimes)
    classpath_fingerprint: str = ""


def _cache_root() -> Path:
    env = os.environ.get("GRAPHMEM_NEO4J_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "graphmem" / "neo4j-launcher"


def launcher_key() -> str:
    """Cache key: hash of the pom, the Java source and the build format."""
    h = hashlib.sha256()
    h.update(_BUILD_FORMAT.encode())
    for path in (_POM, _SOURCE):
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _load_build(directory: Path) -> LauncherBuild | None:
    """Return the cached build in ``directory`` if complete and its jars exist."""
    marker = directory / "BUILD_OK"
    cp_file = directory / "classpath.txt"
    launcher_jar = directory / "launcher.jar"
    if not (marker.is_file() and cp_file.is_file() and launcher_jar.is_file()):
        return None
    entries = [launcher_jar, *(Path(p) for p in cp_file.read_text().strip().split(os.pathsep) if p)]
    h = hashlib.sha256()
    for entry in entries:
        try:
            st = entry.stat()
        except OSError:
            return None  # e.g. ~/.m2 was cleaned: rebuild
        h.update(f"{entry}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return LauncherBuild(directory, os.pathsep.join(map(str, entries)), 0.0, h.hexdigest()[:16])


def _write_jar(classes: Path, jar: Path) -> None:
    """Package compiled classes as a jar (a zip; no `jar` tool needed). Class
    data sharing only archives classes loaded from jars, not directories."""
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        for path in sorted(classes.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(classes).as_posix())


def _run_build_step(cmd: Sequence[str], what: str, cwd: Path, timeout: float) -> None:
    log.info("neo4j launcher: %s: %s", what, shlex.join(cmd))
    try:
        res = subprocess.run(
            list(cmd),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise Neo4jLaunchError(f"{what} timed out after {timeout:.0f}s: {shlex.join(cmd)}") from exc
    except OSError as exc:
        raise Neo4jLaunchError(f"{what} could not run: {exc}") from exc
    if res.returncode != 0:
        output = (res.stdout + res.stderr).strip()
        raise Neo4jLaunchError(f"{what} failed (exit {res.returncode}): {shlex.join(cmd)}\n{output[-4000:]}")


def build_launcher(*, force: bool = False, maven_timeout: float = MAVEN_TIMEOUT) -> LauncherBuild:
    """Resolve the Neo4j classpath with Maven and compile the launcher, once.

    The result is cached under ``$GRAPHMEM_NEO4J_CACHE`` (default
    ``~/.cache/graphmem/neo4j-launcher``) in a directory named after
    :func:`launcher_key`. An ``fcntl`` lock keeps concurrent processes from
    building at the same time; the loser reuses the winner's build.
    """
    ok, reason = available()
    if not ok:
        raise Neo4jLaunchError(reason)
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    key = launcher_key()
    final = root / key
    if not force:
        cached = _load_build(final)
        if cached is not None:
            return cached
    with open(root / f"{key}.lock", "a+") as lock_fh:
        fcntl.flock(lock_fh.fileno(), fcntl.LOCK_EX)
        try:
            if not force:
                cached = _load_build(final)  # built by another process meanwhile
                if cached is not None:
                    return cached
            t0 = time.monotonic()
            tmp = Path(tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=root))
            try:
                mvn = shutil.which("mvn")
                javac = shutil.which("javac")
                if mvn is None or javac is None:
                    raise Neo4jLaunchError("mvn or javac disappeared from PATH")
                cp_file = tmp / "classpath.txt"
                _run_build_step(
                    [
                        mvn,
                        "-q",
                        "-B",
                        "-f",
                        str(_POM),
                        "dependency:build-classpath",
                        f"-Dmdep.outputFile={cp_file}",
                        "-Dmdep.includeScope=runtime",
                    ],
                    "Maven classpath resolution",
                    tmp,
                    maven_timeout,
                )
                classpath = cp_file.read_text().strip()
                if not classpath:
                    raise Neo4jLaunchError("Maven returned an empty classpath")
                _run_build_step(
                    [
                        javac,
                        "--release",
                        "17",
                        "-encoding",
                        "UTF-8",
                        "-d",
                        str(tmp / "classes"),
                        "-cp",
                        classpath,
                        str(_SOURCE),
                    ],
                    "javac",
                    tmp,
                    300.0,
                )
                _write_jar(tmp / "classes", tmp / "launcher.jar")
                info = {
                    "neo4j_version": NEO4J_VERSION,
                    "key": key,
                    "build_seconds": round(time.monotonic() - t0, 3),
                    "built_at": time.time(),
                }
                (tmp / "BUILD_OK").write_text(json.dumps(info, indent=2) + "\n")
                if final.exists():
                    shutil.rmtree(final)
                os.replace(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            build = _load_build(final)
            if build is None:
                raise Neo4jLaunchError(f"launcher build in {final} is incomplete")
            seconds = time.monotonic() - t0
            log.info("neo4j launcher built in %.1fs into %s", seconds, final)
            return dataclasses.replace(build, build_seconds=seconds)
        finally:
            fcntl.flock(lock_fh.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------
# The local server
# --------------------------------------------------------------------------


def _heap_flags(spec: str) -> list[str]:
    spec = spec.strip()
    if not spec:
        return shlex.split(DEFAULT_HEAP)
    if spec.startswith("-"):
        return shlex.split(spec)
    # a bare max size such as "1g" or "512m"
    return [f"-Xms{spec}" if _size_bytes(spec) < 256 * 2**20 else "-Xms256m", f"-Xmx{spec}"]


def _size_bytes(spec: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*", spec.lower())
    if m is None:
        raise ValueError(f"bad size: {spec!r} (use e.g. 512m, 1g)")
    multipliers = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    return int(m.group(1)) * multipliers[m.group(2)]


def _java_fingerprint(java: str) -> str:
    real = os.path.realpath(java)
    try:
        st = os.stat(real)
    except OSError:
        return "unknown"
    return hashlib.sha256(f"{real}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:12]


def _tail(path: Path, max_bytes: int = 6000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"


def _bolt_handshake(host: str, port: int, timeout: float) -> bool:
    """Raw Bolt handshake (used only if the neo4j driver is not installed)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"\x60\x60\xb0\x17" + struct.pack(">IIII", 0x00000405, 0x00000404, 4, 3))
            data = b""
            while len(data) < 4:
                chunk = sock.recv(4 - len(data))
                if not chunk:
                    return False
                data += chunk
            return data != b"\x00\x00\x00\x00"
    except OSError:
        return False


def _bolt_answers(uri: str, auth: tuple[str, str] | None, timeout: float) -> tuple[bool, str]:
    """Whether a Bolt server at ``uri`` answers; uses the neo4j driver's
    ``verify_connectivity`` when the driver is installed."""
    try:
        import neo4j
    except ImportError:
        host, _, port = uri.removeprefix("bolt://").rpartition(":")
        ok = _bolt_handshake(host, int(port), timeout)
        return ok, "" if ok else "no Bolt handshake"
    try:
        with neo4j.GraphDatabase.driver(uri, auth=auth, connection_timeout=timeout) as driver:
            driver.verify_connectivity()
        return True, ""
    except Exception as exc:  # any failure means "not yet"
        return False, f"{type(exc).__name__}: {exc}"


class LocalNeo4j:
    """A Neo4j 5.26 Community server in a child JVM, Bolt on 127.0.0.1.

    Authentication is disabled (any credentials are accepted). Data lives in
    ``data_dir`` or, by default, in a fresh temporary directory that
    :meth:`stop` removes. :meth:`restart` keeps port and data.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        heap: str | None = None,
        pagecache: str | None = None,
        start_timeout: float | None = None,
        java_opts: Sequence[str] = (),
    ) -> None:
        self._port: int | None = port if port else None
        self._user_data_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._heap = heap if heap is not None else os.environ.get("GRAPHMEM_NEO4J_HEAP", DEFAULT_HEAP)
        self._pagecache = (
            pagecache
            if pagecache is not None
            else os.environ.get("GRAPHMEM_NEO4J_PAGECACHE", DEFAULT_PAGECACHE)
        )
        if start_timeout is None:
            start_timeout = float(os.environ.get("GRAPHMEM_NEO4J_START_TIMEOUT", str(DEFAULT_START_TIMEOUT)))
        self.start_timeout = start_timeout
        self._java_opts = [*java_opts, *shlex.split(os.environ.get("GRAPHMEM_NEO4J_JAVA_OPTS", ""))]
        self._workdir: Path | None = None  # temp dir we own (None if user data_dir)
        self._home: Path | None = None
        self._log_path: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._atexit_registered = False
        # (temporary archive the running JVM dumps at exit, final archive path)
        self._cds_pending: tuple[Path, Path] | None = None
        #: seconds the last start() took to reach a Bolt answer (after build)
        self.last_start_seconds: float | None = None
        #: the launcher build used by the last start()
        self.build: LauncherBuild | None = None

    # -- properties ---------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("LocalNeo4j has not been started yet")
        return self._port

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def auth(self) -> tuple[str, str]:
        """Credentials to pass to the driver (accepted, since auth is off)."""
        return DEFAULT_AUTH

    @property
    def home(self) -> Path | None:
        """Neo4j home (data, transaction logs, ``logs/debug.log``)."""
        return self._home

    @property
    def log_path(self) -> Path | None:
        """The launcher's stdout/stderr log."""
        return self._log_path

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ----------------------------------------------------------

    def _prepare_dirs(self) -> tuple[Path, Path]:
        if self._home is not None and self._log_path is not None:
            return self._home, self._log_path
        if self._user_data_dir is not None:
            home = self._user_data_dir
            home.mkdir(parents=True, exist_ok=True)
            log_path = home / "launcher.log"
        else:
            self._workdir = Path(tempfile.mkdtemp(prefix="graphmem-neo4j-"))
            home = self._workdir / "neo4j"
            log_path = self._workdir / "launcher.log"
        self._home, self._log_path = home, log_path
        return home, log_path

    def start(self) -> LocalNeo4j:
        """Build (if needed), launch, and wait until Bolt answers."""
        if self.running:
            return self
        build = build_launcher()
        self.build = build
        java = shutil.which("java")
        if java is None:
            raise Neo4jLaunchError("java not found on PATH")
        home, log_path = self._prepare_dirs()
        cmd = [
            java,
            *_heap_flags(self._heap),
            *JVM_FLAGS,
            *self._cds_flags(build, java),
            *self._java_opts,
            "-cp",
            build.classpath,
            _MAIN_CLASS,
            "--home",
            str(home),
            "--port",
            str(self._port or 0),
            "--pagecache",
            self._pagecache,
        ]
        t0 = time.monotonic()
        with open(log_path, "ab") as log_fh:
            offset = log_fh.tell()
            shown = ["<classpath>" if arg == build.classpath else arg for arg in cmd]
            log_fh.write(
                f"==== graphmem: starting Neo4j launcher {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
                f"==== {shlex.join(shown)}\n"
                f"==== classpath: {build.directory / 'classpath.txt'}\n".encode()
            )
            log_fh.flush()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,  # closing it tells the launcher to exit
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in a terminal goes to us, not the JVM
                close_fds=True,
            )
        if not self._atexit_registered:
            atexit.register(self._atexit_stop)
            self._atexit_registered = True
        try:
            self._wait_ready(log_path, offset, t0)
        except BaseException:
            self._stop_process(DEFAULT_STOP_TIMEOUT)
            raise
        self.last_start_seconds = time.monotonic() - t0
        log.info("Neo4j %s ready at %s in %.1fs", NEO4J_VERSION, self.uri, self.last_start_seconds)
        return self

    def _cds_flags(self, build: LauncherBuild, java: str) -> list[str]:
        """JVM flags for class data sharing (AppCDS, Java 17 dynamic archive):
        map the archive if one exists for this JVM + classpath, else have this
        JVM dump one when it exits (see :meth:`_finish_cds`)."""
        self._cds_pending = None
        if os.environ.get("GRAPHMEM_NEO4J_CDS", "1") == "0":
            return []
        fingerprint = hashlib.sha256(
            f"{_java_fingerprint(java)}\0{build.classpath_fingerprint}".encode()
        ).hexdigest()[:16]
        archive = build.directory / f"cds-{fingerprint}.jsa"
        if archive.is_file():
            return [f"-XX:SharedArchiveFile={archive}"]
        tmp = build.directory / f"cds-{fingerprint}.jsa.{os.getpid()}-{id(self):x}.tmp"
        self._cds_pending = (tmp, archive)
        # -Xlog: silence the (harmless) "Skipping ...: Signed JAR" dump warnings
        return [f"-XX:ArchiveClassesAtExit={tmp}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]

    def _finish_cds(self, returncode: int | None) -> None:
        """After the JVM exited: keep its dumped archive if it exited cleanly."""
        pending, self._cds_pending = self._cds_pending, None
        if pending is None:
            return
        tmp, archive = pending
        try:
            clean = returncode in (0, 128 + signal.SIGTERM)
            if clean and tmp.is_file() and tmp.stat().st_size > 2**20 and not archive.exists():
                os.replace(tmp, archive)
                log.info("neo4j launcher: wrote class-data-sharing archive %s", archive)
        except OSError as exc:
            log.warning("neo4j launcher: could not keep CDS archive %s: %s", tmp, exc)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def _failure(self, message: str) -> Neo4jLaunchError:
        parts = [message]
        if self._log_path is not None:
            parts.append(f"--- tail of {self._log_path} ---\n{_tail(self._log_path)}")
        if self._home is not None:
            debug = self._home / "logs" / "debug.log"
            if debug.exists():
                parts.append(f"--- tail of {debug} ---\n{_tail(debug, 4000)}")
        return Neo4jLaunchError("\n".join(parts))

    def _wait_ready(self, log_path: Path, offset: int, t0: float) -> None:
        proc = self._proc
        assert proc is not None
        deadline = t0 + self.start_timeout
        port: int | None = None
        while port is None:
            code = proc.poll()
            if code is not None:
                raise self._failure(f"Neo4j launcher exited with code {code} before READY")
            with open(log_path, "rb") as fh:
                fh.seek(offset)
                m = _READY_RE.search(fh.read().decode("utf-8", "replace"))
            if m is not None:
                port = int(m.group(1))
                break
            if time.monotonic() > deadline:
                raise self._failure(f"Neo4j launcher printed no READY line within {self.start_timeout:.0f}s")
            time.sleep(0.1)
        self._port = port
        last_error = ""
        while True:
            code = proc.poll()
            if code is not None:
                raise self._failure(f"Neo4j launcher exited with code {code} after READY")
            remaining = deadline - time.monotonic()
            ok, last_error = _bolt_answers(self.uri, None, max(1.0, min(5.0, remaining)))
            if ok:
                return
            if time.monotonic() > deadline:
                raise self._failure(
                    f"Bolt at {self.uri} did not answer within {self.start_timeout:.0f}s "
                    f"(last error: {last_error})"
                )
            time.sleep(0.2)

    def _stop_process(self, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if self._cds_pending is not None:
            timeout = max(timeout, CDS_DUMP_STOP_TIMEOUT)
        if proc.poll() is None:
            # Both paths run the launcher's shutdown hook (clean DBMS shutdown).
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("Neo4j launcher pid %d did not stop in %.0fs; killing", proc.pid, timeout)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait()
        elif proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        self._finish_cds(proc.returncode)

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Stop the server and remove its temporary directory (unless a
        ``data_dir`` was given, or ``GRAPHMEM_NEO4J_KEEP=1``). Idempotent."""
        self._stop_process(timeout)
        if self._atexit_registered:
            atexit.unregister(self._atexit_stop)
            self._atexit_registered = False
        if self._workdir is not None and os.environ.get("GRAPHMEM_NEO4J_KEEP") != "1":
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
            self._home = None
            self._log_path = None

    def restart(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Stop the server cleanly and start it again on the same port with
        the same data directory (data survives)."""
        if self._home is None:
            raise RuntimeError("restart() needs a started server")
        self._stop_process(timeout)
        self.start()

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown), keeping port and data, so
        a following :meth:`start` recovers like after a crash."""
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        self._finish_cds(None)

    def _atexit_stop(self) -> None:
        with contextlib.suppress(Exception):
            self.stop(timeout=20.0)

    def __enter__(self) -> LocalNeo4j:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        port = self._port if self._port is not None else "?"
        return f"<LocalNeo4j {state} bolt://127.0.0.1:{port}>"


# --------------------------------------------------------------------------
# Test fixture resolution
# --------------------------------------------------------------------------


def _no_restart(reason: str) -> Callable[[], None]:
    def restart() -> None:
        raise NotImplementedError(reason)

    return restart


@dataclasses.dataclass
class Neo4jTarget:
    """Where tests should find Neo4j. ``uri is None`` means nowhere; then
    ``reason`` says why (use it as the skip/fail message)."""

    uri: str | None
    auth: tuple[str, str] | None
    reason: str
    #: "env", "docker", "local" or "none"
    kind: str = "none"
    _close: Callable[[], None] | None = dataclasses.field(default=None, repr=False)
    _restart: Callable[[], None] | None = dataclasses.field(default=None, repr=False)
    #: the :class:`LocalNeo4j` behind a "local" target (e.g. for ``kill()``)
    server: LocalNeo4j | None = dataclasses.field(default=None, repr=False)

    @property
    def available(self) -> bool:
        return self.uri is not None

    def close(self) -> None:
        """Stop whatever :func:`resolve_test_neo4j` started. Idempotent."""
        close, self._close = self._close, None
        if close is not None:
            close()

    def restart(self) -> None:
        """Restart the server keeping its data and URI (local launcher only)."""
        if self._restart is None:
            raise NotImplementedError(f"restart is not supported for a {self.kind!r} Neo4j target")
        self._restart()


def _env_target() -> Neo4jTarget | None:
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        return None
    user = os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME") or DEFAULT_AUTH[0]
    password = os.environ.get("NEO4J_PASSWORD", DEFAULT_AUTH[1])
    auth = (user, password) if password else None  # NEO4J_PASSWORD="" -> no auth
    return Neo4jTarget(
        uri=uri,
        auth=auth,
        reason=f"NEO4J_URI={uri}",
        kind="env",
        _restart=_no_restart("the server at NEO4J_URI is not managed by the tests"),
    )


def _docker_target() -> tuple[Neo4jTarget | None, str]:
    if not docker_available():
        return None, "no Docker engine (`docker info` failed)"
    try:
        tc_neo4j = importlib.import_module("testcontainers.community.neo4j")
    except ImportError:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                tc_neo4j = importlib.import_module("testcontainers.neo4j")
        except Exception as exc:  # ImportError, or a warning turned into an error
            return None, f"testcontainers is not usable: {type(exc).__name__}: {exc}"
    container = tc_neo4j.Neo4jContainer(DOCKER_IMAGE)
    try:
        container.start()
        uri = str(container.get_connection_url())
        user = str(getattr(container, "username", DEFAULT_AUTH[0]) or DEFAULT_AUTH[0])
        password = str(getattr(container, "password", DEFAULT_AUTH[1]) or DEFAULT_AUTH[1])
    except Exception as exc:  # report and fall through
        with contextlib.suppress(Exception):
            container.stop()
        return None, f"testcontainers {DOCKER_IMAGE} failed: {type(exc).__name__}: {exc}"

    def close() -> None:
        container.stop()

    target = Neo4jTarget(
        uri=uri,
        auth=(user, password),
        reason=f"testcontainers {DOCKER_IMAGE}",
        kind="docker",
        _close=close,
        _restart=_no_restart("restart is only supported by the local launcher"),
    )
    return target, ""


def resolve_test_neo4j(*, allow_docker: bool = True, allow_local: bool = True) -> Neo4jTarget:
    """Find a Neo4j for tests, in this order:

    1. ``NEO4J_URI`` (with ``NEO4J_USER``/``NEO4J_PASSWORD``, default
       ``neo4j``/``graphmem-local`` as in docker-compose.yml; an empty
       ``NEO4J_PASSWORD`` means no auth);
    2. a testcontainers ``neo4j:5.26-community`` container, if the package is
       installed and Docker answers;
    3. the local launcher (:class:`LocalNeo4j`), if Java 17+ and Maven exist;
    4. nothing: ``uri=None`` and ``reason`` saying why.

    Call ``close()`` on the result when done. Failures to *start* the local
    launcher raise :class:`Neo4jLaunchError` rather than being skipped.
    """
    env = _env_target()
    if env is not None:
        return env
    reasons: list[str] = ["NEO4J_URI is not set"]
    if allow_docker:
        docker, why = _docker_target()
        if docker is not None:
            return docker
        reasons.append(f"Docker: {why}")
    else:
        reasons.append("Docker: disabled")
    if allow_local:
        ok, why = available()
        if ok:
            server = LocalNeo4j().start()
            return Neo4jTarget(
                uri=server.uri,
                auth=server.auth,
                reason=f"local Neo4j {NEO4J_VERSION} launcher (pid {server.pid})",
                kind="local",
                _close=server.stop,
                _restart=server.restart,
                server=server,
            )
        reasons.append(f"local launcher: {why}")
    else:
        reasons.append("local launcher: disabled")
    return Neo4jTarget(
        uri=None,
        auth=None,
        reason="NO NEO4J AVAILABLE for tests -- " + "; ".join(reasons),
        kind="none",
    )


# --------------------------------------------------------------------------
# python -m graphmem.testing.neo4j_server
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m graphmem.testing.neo4j_server",
        description=f"Run a local Neo4j {NEO4J_VERSION} Community server (Bolt, no auth) "
        "until Ctrl-C / SIGTERM. Prints the bolt:// URI on stdout.",
    )
    parser.add_argument("--port", type=int, default=0, help="Bolt port (default: a free one)")
    parser.add_argument("--data-dir", help="keep data here (default: a temp dir, removed on exit)")
    parser.add_argument("--heap", help=f"JVM heap: size or flags (default {DEFAULT_HEAP!r})")
    parser.add_argument("--pagecache", help=f"page cache size (default {DEFAULT_PAGECACHE})")
    parser.add_argument("--timeout", type=float, help="start timeout in seconds")
    parser.add_argument("--build-only", action="store_true", help="build the launcher cache and exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    if args.build_only:
        build = build_launcher()
        print(build.directory, flush=True)
        return 0

    stop_event = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = LocalNeo4j(
        port=args.port or None,
        data_dir=args.data_dir,
        heap=args.heap,
        pagecache=args.pagecache,
        start_timeout=args.timeout,
    )
    try:
        server.start()
        print(server.uri, flush=True)
        print(
            f"Neo4j {NEO4J_VERSION} up (pid {server.pid}, home {server.home}, log {server.log_path}); "
            "Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        while not stop_event.wait(1.0):
            if not server.running:
                print("Neo4j launcher exited unexpectedly", file=sys.stderr)
                if server.log_path is not None:
                    print(_tail(server.log_path), file=sys.stderr)
                return 1
        return 0
    finally:
        server.stop()


def java_processes(marker: str) -> list[int]:
    """PIDs of java processes whose command line contains ``marker``
    (Linux /proc; used by tests to check nothing is left behind)."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"java") and marker.encode() in b" ".join(cmdline):
            pids.append(int(entry.name))
    return pids


if __name__ == "__main__":
    raise SystemExit(main())
