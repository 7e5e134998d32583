"""clickhouse_harness.py — real ClickHouse servers for the --clickhouse tests
and bench/bench_clickhouse.py: Debian's clickhouse-server (18.16), each on
spare loopback ports, with its data, tmp, logs and configuration in a
temporary directory. Servers are stopped by stop() (SIGTERM, then SIGKILL),
and die with the process that started them (PR_SET_PDEATHSIG), so a test
killed by its timeout leaves none behind.

    with Servers(2, cluster="orbit_test") as (a, b):
        a.query("SELECT 1")
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"


def available():
    return os.access(SERVER, os.X_OK)


class ClickHouseError(Exception):
    pass


def _spare_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/log/server.log</log>
    <errorlog>{dir}/log/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
  <remote_servers>{clusters}</remote_servers>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>default</quota></default>
    <limited><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile><quota>limited</quota></limited>
  </users>
  <quotas>
    <default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
      <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default>
    <limited><interval><duration>3600</duration><queries>{quota}</queries><errors>0</errors>
      <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></limited>
  </quotas>
</yandex>
"""


class Server:
    """One clickhouse-server. shards: the TCP addresses ("host:port") of the
    cluster's shards, one replica each, written as cluster `cluster`."""

    def __init__(self, root, name, quota=1000000):
        self.dir = os.path.join(root, name)
        self.name = name
        self.quota = quota
        self.http, self.tcp = _spare_ports(2)
        self.proc = None

    def configure(self, cluster=None, shards=()):
        for sub in ("log", "data", "tmp", "user_files", "format_schemas"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        clusters = ""
        if cluster:
            clusters = "<%s>%s</%s>" % (cluster, "".join(
                "<shard><replica><host>%s</host><port>%s</port></replica></shard>" %
                tuple(s.rsplit(":", 1)) for s in shards), cluster)
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(CONFIG.format(dir=self.dir, http=self.http, tcp=self.tcp,
                                  clusters=clusters))
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(USERS.format(quota=self.quota))

    def start(self, timeout=30):
        out = open(os.path.join(self.dir, "log", "stdout"), "ab")
        self.proc = subprocess.Popen(
            [SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=self.dir, preexec_fn=_die_with_parent)
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ClickHouseError("%s exited %d at start: %s" % (
                    self.name, self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.http,
                                            timeout=1) as r:
                    if r.read().startswith(b"Ok"):
                        return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.02)
        raise ClickHouseError("%s did not answer within %d s: %s" % (
            self.name, timeout, self.log_tail()))

    def terminate(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def stop(self, grace=3):
        """SIGTERM; SIGKILL after grace s. A server waits at shutdown for
        the connections other servers keep to it, which a test need not
        wait for: what an INSERT acknowledged is on disk either way."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "log", "error.log"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def url(self, database="orbit", **params):
        q = {"database": database} if database else {}
        q.update(params)
        return "http://127.0.0.1:%d/?%s" % (self.http, urllib.parse.urlencode(q))

    def query(self, sql, data=None, database="orbit", **params):
        """The reply's bytes; raises ClickHouseError with ClickHouse's text."""
        if data is not None:
            params["query"] = sql
            body = data
        else:
            body = sql.encode()
        params.setdefault("wait_end_of_query", "1")
        req = urllib.request.Request(self.url(database, **params), data=body, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            raise ClickHouseError(e.read().decode(errors="replace")) from None

    def rows(self, sql, **kw):
        """The rows as lists of str, from TSV: escapes undone, bytes that are
        not UTF-8 kept as surrogates (errors="surrogateescape")."""
        text = self.query(sql + " FORMAT TSV", **kw).decode(errors="surrogateescape")
        return [[_unescape(v) for v in line.split("\t")] for line in text.split("\n")[:-1]]


_ESCAPES = {"b": "\b", "f": "\f", "r": "\r", "n": "\n", "t": "\t", "0": "\0", "'": "'",
            "\\": "\\"}


def _unescape(v):
    """One TSV field of ClickHouse, as it was."""
    if "\\" not in v:
        return v
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            out.append(_ESCAPES.get(v[i + 1], v[i + 1]))
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


class Servers:
    """n servers started together; with cluster, each knows the cluster of
    all n (one shard each) under that name. Stopped on leaving."""

    def __init__(self, n, cluster=None, quota=1000000, shard_addrs=None):
        self.root = tempfile.mkdtemp(prefix="orbit-clickhouse-")
        self.servers = [Server(self.root, "ch%d" % i, quota) for i in range(n)]
        self.cluster = cluster
        self.shard_addrs = shard_addrs

    def __enter__(self):
        try:
            shards = self.shard_addrs or ["127.0.0.1:%d" % s.tcp for s in self.servers]
            for s in self.servers:
                s.configure(self.cluster, shards)
            for s in self.servers:
                s.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self.servers

    def __exit__(self, *exc):
        for s in self.servers:
            s.terminate()
        for s in self.servers:
            s.stop()
        if os.environ.get("ORBIT_KEEP_CLICKHOUSE"):
            print("kept " + self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        return False
