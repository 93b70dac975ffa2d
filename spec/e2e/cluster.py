#!/usr/bin/env python3
"""A real Kubernetes 1.37 control plane for the e2e specs, on 127.0.0.1 only.

    spec/e2e/cluster.py run [--keep] -- CMD ARGS...   start, run CMD, stop everything
    spec/e2e/cluster.py up                            start, print how to use it, wait for ^C
    spec/e2e/cluster.py restart kube-apiserver --dir D   (used by specs mid-run)

It starts etcd, kube-apiserver (token auth, RBAC, service-account keys, the
resource.k8s.io and scheduling.k8s.io versions, audit log) and
kube-controller-manager (resourceclaim, device-taint-eviction, garbage-collector,
namespace, resourcepoolstatusrequest and podgroup-protection controllers), all from the binaries that
spec/e2e/k8s/build.sh builds (and builds when missing), then applies
examples/deploy/rbac.yaml and writes a kubeconfig with a token of the draengine
ServiceAccount, so `draengine serve` runs with exactly the rights the example
grants. No kubelet runs: nodes are API objects the specs create.

Everything lives in one temp dir. Every process started here (and every pid a
spec registers under DIR/pids/) is stopped on exit, ^C and SIGTERM included.
The dir, with every component's log, is kept when CMD fails or with --keep.

CMD sees: E2E_DIR, E2E_K8S_BIN, E2E_SERVER, E2E_ADMIN_KUBECONFIG,
E2E_DRAENGINE_KUBECONFIG, E2E_FEATURE_GATES, E2E_AUDIT_LOG, E2E_CLUSTER (this script).

E2E_APISERVER_PROFILING=1 starts kube-apiserver with --profiling, so that
`go tool pprof` can read its /debug/pprof/profile with the admin token (where
a bench run spends the server's CPU); off by default, as in the specs' runs.
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# One gate string for every component (and draengine): the 1.37 DRA gates that
# are off by default (alpha, and beta-off), switched on. Beta-on and GA gates
# are on already.
FEATURE_GATES = ",".join(g + "=true" for g in [
    "DRAWorkloadResourceClaims", "GenericWorkload",
    "DRAListTypeAttributes", "DRANodeAllocatableResources", "DRAOptionalNodeOperations",
    "DRADeviceCompatibilityGroups", "DRADerivedAttributes",
    "DRAPartitionableDevicesType", "DRAResourcePoolStatus",
])

RUNTIME_CONFIG = ",".join(v + "=true" for v in [
    "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3",
])

CONTROLLERS = ",".join([
    "resourceclaim-controller", "device-taint-eviction-controller",
    "garbage-collector-controller", "namespace-controller",
    "resourcepoolstatusrequest-controller", "podgroup-protection-controller",
])

ADMIN_TOKEN = "e2e-admin-token-7f3c0a9d2b"
DRAENGINE_SA = ("draengine-system", "draengine")

# The audit policy records every request of the draengine ServiceAccount and of
# the reference scheduler at Metadata level (verb, resource, response code):
# the specs prove from it that the RBAC example suffices (no 403) and count
# requests per pod.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["system:serviceaccount:draengine-system:draengine", "e2e-reference-scheduler"]
- level: None
"""


def log(msg):
    sys.stderr.write("e2e-cluster: %s\n" % msg)
    sys.stderr.flush()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sh(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def k8s_bin():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([os.path.join(HERE, "k8s", "build.sh")], stdout=subprocess.PIPE, env=env)
    if r.returncode != 0:
        raise SystemExit("e2e-cluster: building the Kubernetes components failed")
    return r.stdout.decode().strip().splitlines()[-1]


class Cluster:
    def __init__(self, d, binp=None):
        self.dir = d
        self.bin = binp
        self.state = os.path.join(d, "state.json")

    # -- persistent state (so `restart` works from another process) --------
    def load(self):
        with open(self.state) as f:
            st = json.load(f)
        self.bin = st["bin"]
        self.cmds = st["cmds"]
        self.server = st["server"]
        return self

    def save(self):
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"bin": self.bin, "cmds": self.cmds, "server": self.server}, f)
        os.rename(tmp, self.state)

    def path(self, *p):
        return os.path.join(self.dir, *p)

    # -- processes -----------------------------------------------------------
    def spawn(self, name):
        argv = self.cmds[name]
        out = open(self.path(name + ".log"), "ab")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, env=env)
        out.close()
        with open(self.path(name + ".pid"), "w") as f:
            f.write(str(p.pid))
        return p

    def pid(self, name):
        try:
            with open(self.path(name + ".pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    @staticmethod
    def alive(pid):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        # A zombie counts as gone, but only a whole one: a Go program whose
        # first thread ended shows state Z while its other threads still run
        # (and still hold its listening socket).
        try:
            with open("/proc/%d/status" % pid) as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            return not (st.get("State", "").strip().startswith("Z") and
                        int(st.get("Threads", "1").strip() or 1) <= 1)
        except (OSError, ValueError):
            return False

    @staticmethod
    def kill_group(pid, grace=10.0):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for target in (lambda: os.killpg(pid, sig), lambda: os.kill(pid, sig)):
                try:
                    target()
                except OSError:
                    pass
            deadline = time.time() + (grace if sig == signal.SIGTERM else 5)
            while time.time() < deadline and Cluster.alive(pid):
                try:
                    os.waitpid(pid, os.WNOHANG)
                except OSError:
                    pass
                time.sleep(0.05)
            if not Cluster.alive(pid):
                return

    def stop_component(self, name):
        pid = self.pid(name)
        if pid:
            self.kill_group(pid)

    def stop_all(self):
        # processes the specs registered (draengine serve, kube-scheduler, ...)
        pdir = self.path("pids")
        if os.path.isdir(pdir):
            for n in sorted(os.listdir(pdir)):
                try:
                    with open(os.path.join(pdir, n)) as f:
                        pid = int(f.read().strip() or 0)
                except (OSError, ValueError):
                    continue
                if pid and self.alive(pid):
                    self.kill_group(pid, grace=5)
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            self.stop_component(name)

    # -- readiness -----------------------------------------------------------
    def ssl_ctx(self):
        ctx = ssl.create_default_context(cafile=self.path("pki", "ca.crt"))
        return ctx

    def get(self, path, timeout=5):
        req = urllib.request.Request(self.server + path,
                                     headers={"Authorization": "Bearer " + ADMIN_TOKEN})
        with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_ctx()) as r:
            return r.status, r.read()

    def wait(self, what, fn, secs, proc_name):
        deadline = time.time() + secs
        while time.time() < deadline:
            try:
                if fn():
                    return
            except Exception:
                pass
            pid = self.pid(proc_name)
            if pid and not self.alive(pid):
                tail = open(self.path(proc_name + ".log"), errors="replace").read()[-3000:]
                raise SystemExit("e2e-cluster: %s exited during start-up:\n%s" % (proc_name, tail))
            time.sleep(0.1)
        raise SystemExit("e2e-cluster: %s not ready after %d s (log: %s)" %
                         (what, secs, self.path(proc_name + ".log")))

    def wait_apiserver(self, secs=90):
        self.wait("kube-apiserver", lambda: self.get("/readyz")[0] == 200, secs, "kube-apiserver")

    # -- set-up --------------------------------------------------------------
    def pki(self):
        p = self.path("pki")
        os.makedirs(p)
        o = lambda *a: sh(["openssl"] + list(a), cwd=p)
        o("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
        o("req", "-x509", "-new", "-key", "ca.key", "-days", "3", "-subj", "/CN=draengine-e2e-ca",
          "-out", "ca.crt")
        o("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "apiserver.key")
        with open(os.path.join(p, "san.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
                    "extendedKeyUsage=serverAuth\n")
        o("req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver", "-out", "apiserver.csr")
        o("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
          "-CAcreateserial", "-days", "3", "-extfile", "san.cnf", "-out", "apiserver.crt")
        o("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key")
        o("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        with open(os.path.join(p, "tokens.csv"), "w") as f:
            f.write('%s,e2e-admin,e2e-admin,"system:masters"\n' % ADMIN_TOKEN)
            f.write('e2e-reference-token-51d2,e2e-reference-scheduler,e2e-reference-scheduler,'
                    '"system:masters"\n')

    def kubeconfig(self, name, token):
        path = self.path(name)
        with open(path, "w") as f:
            f.write("""apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: %s}
current-context: e2e
""" % (self.server, self.path("pki", "ca.crt"), name, token, name))
        os.chmod(path, 0o600)
        return path

    def start(self):
        t0 = time.time()
        self.pki()
        with open(self.path("audit-policy.yaml"), "w") as f:
            f.write(AUDIT_POLICY)
        etcd_port, etcd_peer, api_port = free_port(), free_port(), free_port()
        self.server = "https://127.0.0.1:%d" % api_port
        b = lambda n: os.path.join(self.bin, n)
        self.cmds = {
            "etcd": [b("etcd"), "--name", "e2e", "--data-dir", self.path("etcd"),
                     "--listen-client-urls", "http://127.0.0.1:%d" % etcd_port,
                     "--advertise-client-urls", "http://127.0.0.1:%d" % etcd_port,
                     "--listen-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
                     "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % etcd_peer,
                     "--initial-cluster", "e2e=http://127.0.0.1:%d" % etcd_peer,
                     "--unsafe-no-fsync", "--log-level", "warn"],
            "kube-apiserver": [
                b("kube-apiserver"),
                "--etcd-servers=http://127.0.0.1:%d" % etcd_port,
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                "--secure-port=%d" % api_port,
                "--endpoint-reconciler-type=none",
                "--tls-cert-file=" + self.path("pki", "apiserver.crt"),
                "--tls-private-key-file=" + self.path("pki", "apiserver.key"),
                "--client-ca-file=" + self.path("pki", "ca.crt"),
                "--token-auth-file=" + self.path("pki", "tokens.csv"),
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file=" + self.path("pki", "sa.pub"),
                "--service-account-signing-key-file=" + self.path("pki", "sa.key"),
                "--api-audiences=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority",
                "--runtime-config=" + RUNTIME_CONFIG,
                "--feature-gates=" + FEATURE_GATES,
                "--max-requests-inflight=3000", "--max-mutating-requests-inflight=1000",
                "--audit-policy-file=" + self.path("audit-policy.yaml"),
                "--audit-log-path=" + self.path("audit.log"), "--audit-log-format=json",
                "--audit-log-maxsize=0",
                "--profiling=" + ("true" if os.environ.get("E2E_APISERVER_PROFILING") else "false"), "--v=1"],
            "kube-controller-manager": [
                b("kube-controller-manager"),
                "--kubeconfig=" + self.path("admin.kubeconfig"),
                "--controllers=" + CONTROLLERS,
                "--leader-elect=false", "--use-service-account-credentials=false",
                "--secure-port=0", "--feature-gates=" + FEATURE_GATES,
                "--kube-api-qps=2000", "--kube-api-burst=4000",
                "--concurrent-resourceclaim-syncs=20", "--v=1"],
        }
        self.kubeconfig("admin.kubeconfig", ADMIN_TOKEN)
        self.kubeconfig("reference.kubeconfig", "e2e-reference-token-51d2")
        self.save()
        self.spawn("etcd")
        self.wait("etcd", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d/health" % etcd_port, timeout=2).status == 200, 30, "etcd")
        self.spawn("kube-apiserver")
        self.wait_apiserver()
        self.spawn("kube-controller-manager")
        self.kubectl("apply", "-f", os.path.join(ROOT, "examples", "deploy", "rbac.yaml"))
        ns, sa = DRAENGINE_SA
        tok = self.kubectl("-n", ns, "create", "token", sa, "--duration=48h").strip()
        self.kubeconfig("draengine.kubeconfig", tok)
        log("control plane up in %.1f s: %s (dir %s)" % (time.time() - t0, self.server, self.dir))

    def kubectl(self, *args):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        r = subprocess.run([os.path.join(self.bin, "kubectl"),
                            "--kubeconfig", self.path("admin.kubeconfig")] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        if r.returncode != 0:
            raise SystemExit("e2e-cluster: kubectl %s: %s" % (" ".join(args), r.stderr.decode()))
        return r.stdout.decode()

    def env(self):
        e = dict(os.environ)
        e.update({
            "E2E_DIR": self.dir, "E2E_K8S_BIN": self.bin, "E2E_SERVER": self.server,
            "E2E_ADMIN_KUBECONFIG": self.path("admin.kubeconfig"),
            "E2E_DRAENGINE_KUBECONFIG": self.path("draengine.kubeconfig"),
            "E2E_REFERENCE_KUBECONFIG": self.path("reference.kubeconfig"),
            "E2E_FEATURE_GATES": FEATURE_GATES, "E2E_AUDIT_LOG": self.path("audit.log"),
            "E2E_CLUSTER": os.path.abspath(__file__),
        })
        return e


def with_cluster(keep, body):
    """Start a cluster, run body(cluster), stop everything; returns body's exit code."""
    binp = k8s_bin()
    d = tempfile.mkdtemp(prefix="draengine-e2e-")
    os.makedirs(os.path.join(d, "pids"))
    c = Cluster(d, binp)
    stopping = []

    def on_signal(signum, _frame):
        if not stopping:
            stopping.append(signum)
            raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    rc = 1
    try:
        c.start()
        rc = body(c)
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except SystemExit as ex:
        log(str(ex.code) if ex.code is not None else "failed")
        rc = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        c.stop_all()
        if rc == 0 and not keep:
            shutil.rmtree(d, ignore_errors=True)
        else:
            log("logs kept in %s" % d)
    return rc


def cmd_run(argv):
    keep = False
    while argv and argv[0] != "--":
        if argv[0] == "--keep":
            keep = True
        else:
            raise SystemExit("e2e-cluster run: unknown flag %s" % argv[0])
        argv = argv[1:]
    if not argv or len(argv) < 2:
        raise SystemExit("usage: cluster.py run [--keep] -- CMD ARGS...")
    cmd = argv[1:]

    def body(c):
        p = subprocess.Popen(cmd, env=c.env())
        while True:
            try:
                return p.wait()
            except KeyboardInterrupt:
                # ^C reached the command too (same process group); give it a moment
                try:
                    p.wait(timeout=10)
                except (subprocess.TimeoutExpired, KeyboardInterrupt):
                    p.kill()
                return 130
    return with_cluster(keep, body)


def cmd_up(argv):
    def body(c):
        print("export KUBECONFIG=%s" % c.path("admin.kubeconfig"))
        print("# draengine serve --kubeconfig %s --feature-gates %s" %
              (c.path("draengine.kubeconfig"), FEATURE_GATES))
        print("# kubectl: %s" % os.path.join(c.bin, "kubectl"))
        print("# ^C stops everything")
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    return with_cluster("--keep" in argv, body)


def cmd_restart(argv):
    if len(argv) != 3 or argv[1] != "--dir":
        raise SystemExit("usage: cluster.py restart kube-apiserver|kube-controller-manager --dir D")
    name, d = argv[0], argv[2]
    c = Cluster(d).load()
    if name not in c.cmds:
        raise SystemExit("e2e-cluster: no component %s" % name)
    c.stop_component(name)
    if name == "kube-apiserver":
        # its port must be free again before the new one binds it
        port = int(c.server.rsplit(":", 1)[1])
        deadline = time.time() + 30
        while True:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("e2e-cluster: port %d still in use after stopping kube-apiserver" % port)
                time.sleep(0.1)
            finally:
                s.close()
    c.spawn(name)
    if name == "kube-apiserver":
        c.wait_apiserver()
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    sub, argv = sys.argv[1], sys.argv[2:]
    if sub == "run":
        return cmd_run(argv)
    if sub == "up":
        return cmd_up(argv)
    if sub == "restart":
        return cmd_restart(argv)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
