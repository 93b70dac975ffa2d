"""Shared pieces of the e2e tools (spec/e2e/diff, spec/e2e/bench): a small
client for the real kube-apiserver, the two schedulers, and the simulated
cluster as API objects. Standard library only."""
import http.client
import json
import os
import random
import socket
import ssl
import subprocess
import time
import urllib.parse

import cluster

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = cluster.ROOT
DRAENGINE = os.environ.get("DRAENGINE_BIN") or os.path.join(ROOT, "build", "draengine")


class ApiError(Exception):
    def __init__(self, status, body, what):
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__("%s: HTTP %s: %s" % (what, status, msg))
        self.status = status


class Api:
    """One kept-alive HTTPS connection with a bearer token."""

    def __init__(self, server, token, cafile):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port
        self.token = token
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.conn = None

    def _connect(self):
        self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        hdr = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if data is not None:
            hdr["Content-Type"] = ("application/merge-patch+json" if method == "PATCH"
                                   else "application/json")
        for attempt in range(5):
            if self.conn is None:
                self._connect()
            try:
                self.conn.request(method, path, body=data, headers=hdr)
                r = self.conn.getresponse()
                raw = r.read()
                try:
                    obj = json.loads(raw) if raw else None
                except ValueError:
                    obj = raw.decode(errors="replace")
                return r.status, obj
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError("unreachable")

    def ok(self, method, path, body=None, what=None):
        st, obj = self.request(method, path, body)
        if st >= 300:
            raise ApiError(st, obj, what or (method + " " + path))
        return obj

    def create(self, obj):
        return self.ok("POST", collection(obj["kind"], obj["metadata"].get("namespace")) +
                       "?fieldValidation=Strict", obj,
                       "create %s %s" % (obj["kind"], obj["metadata"].get("name")))

    def get(self, kind, ns, name):
        st, obj = self.request("GET", collection(kind, ns) + "/" + name)
        if st == 404:
            return None
        if st != 200:
            raise ApiError(st, obj, "get %s %s" % (kind, name))
        return obj

    def list(self, kind, ns=None, query=""):
        return self.ok("GET", collection(kind, ns) + (("?" + query) if query else ""))["items"]


KINDS = {
    "Node": ("/api/v1", "nodes", False), "Namespace": ("/api/v1", "namespaces", False),
    "Pod": ("/api/v1", "pods", True), "Event": ("/apis/events.k8s.io/v1", "events", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceTaintRule": ("/apis/resource.k8s.io/v1", "devicetaintrules", False),
}


def collection(kind, ns=None):
    base, plural, namespaced = KINDS[kind]
    if namespaced and ns:
        return "%s/namespaces/%s/%s" % (base, ns, plural)
    return "%s/%s" % (base, plural)


def admin(c):
    return Api(c.server, cluster.ADMIN_TOKEN, c.path("pki", "ca.crt"))


# ---- the simulated cluster ----------------------------------------------------------

def sim_objects(nodes, seed, shapes):
    """DeviceClasses, Nodes and ResourceSlices from `draengine sim` (real node shapes)."""
    argv = [DRAENGINE, "sim", "--nodes", str(nodes), "--seed", str(seed), "-o", "json"]
    if shapes:
        argv += ["--shape", shapes]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, env=env).stdout
    return json.loads(out)["items"]


def as_node(obj, taints=None):
    """A sim Node as a kubelet registers it: Ready, with capacity and allocatable."""
    n = json.loads(json.dumps(obj))
    n["metadata"].pop("uid", None)
    if taints:
        n.setdefault("spec", {})["taints"] = taints
    n.setdefault("status", {})["conditions"] = [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "e2e node"}]
    return n


def create_node(api, obj):
    out = api.create(obj)
    if not (out.get("status") or {}).get("allocatable"):
        out["status"] = obj["status"]
        api.ok("PUT", collection("Node") + "/" + out["metadata"]["name"] + "/status", out)
    return out


def create_all(api, objs):
    """Nodes first; an object owned by a Node (a driver's ResourceSlice) is
    re-pointed at the uid the server gave that Node, or the garbage collector
    would delete it as an orphan."""
    uids = {}
    for o in objs:
        if o["kind"] == "Node":
            uids[o["metadata"]["name"]] = create_node(api, o)["metadata"]["uid"]
    for o in objs:
        if o["kind"] == "Node":
            continue
        for ref in o["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Node" and ref.get("name") in uids:
                ref["uid"] = uids[ref["name"]]
        api.create(o)


# ---- the schedulers -------------------------------------------------------------------

def _spawn(c, name, argv):
    log = open(c.path(name + ".log"), "ab")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, env=env)
    log.close()
    with open(c.path("pids", name), "w") as f:
        f.write(str(p.pid))
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_reference(c, qps=5000, burst=5000):
    """The real kube-scheduler: profile `reference`, its own Lease; returns (proc, metrics port)."""
    port = free_port()
    cfg = c.path("reference-scheduler.yaml")
    with open(cfg, "w") as f:
        f.write("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %d
  burst: %d
leaderElection:
  leaderElect: true
  resourceName: kube-scheduler-reference
  resourceNamespace: kube-system
profiles:
- schedulerName: reference
""" % (c.path("reference.kubeconfig"), qps, burst))
    p = _spawn(c, "kube-scheduler", [
        os.path.join(c.bin, "kube-scheduler"), "--config=" + cfg,
        "--feature-gates=" + cluster.FEATURE_GATES, "--bind-address=127.0.0.1",
        "--secure-port=%d" % port, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--authentication-skip-lookup=true", "--v=1"])
    return p, port


def start_draengine(c, qps=5000, burst=5000, extra=(), field_validation="Strict", backoff=("100ms", "1s")):
    """`draengine serve` with the RBAC example's ServiceAccount; returns (proc, http port).
    The specs write with Strict field validation, so that a field the server
    does not know fails them; field_validation=None leaves serve's default
    (the server's), as kube-scheduler does.  They also retry failed pods
    sooner (backoff: initial, max); backoff=None leaves serve's defaults
    (1s, 10s: kube-scheduler's, which the reference runs with)."""
    port = free_port()
    fv = ["--field-validation", field_validation] if field_validation else []
    bo = ["--pod-initial-backoff", backoff[0], "--pod-max-backoff", backoff[1]] if backoff else []
    p = _spawn(c, "draengine-serve", [
        DRAENGINE, "serve", "--kubeconfig", c.path("draengine.kubeconfig"),
        "--feature-gates", cluster.FEATURE_GATES, "--leader-elect=false",
        "--bind-address", "127.0.0.1", "--port", str(port),
        "--kube-api-qps", str(qps), "--kube-api-burst", str(burst)] + bo + fv + list(extra))
    return p, port


def wait_ready(check, what, secs=60, proc=None):
    deadline = time.time() + secs
    while time.time() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        if proc is not None and proc.poll() is not None:
            raise SystemExit("%s exited during start-up" % what)
        time.sleep(0.1)
    raise SystemExit("%s not ready after %d s" % (what, secs))


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (from /proc)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def seeded(seed, salt):
    return random.Random("%s/%s" % (seed, salt))


def scheduled_event(ns, pod, uid, rv, node, stamp_ns):
    """The events.k8s.io/v1 `Scheduled` Event serve writes for a bound pod
    (drivers/kube/kc_objs.c: its fields, its name <pod>.<hex time> and its
    reporting controller), stamped stamp_ns (the name's suffix and the
    eventTime, in microseconds)."""
    ref = {"kind": "Pod", "apiVersion": "v1", "name": pod, "namespace": ns, "uid": uid}
    if rv:
        ref["resourceVersion"] = rv
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "%s.%x" % (pod, stamp_ns), "namespace": ns},
            "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp_ns // 10**9))
            + ".%06dZ" % (stamp_ns // 1000 % 10**6),
            "regarding": ref, "reason": "Scheduled", "action": "Binding",
            "note": "Successfully assigned %s/%s to %s" % (ns, pod, node), "type": "Normal",
            "reportingController": "draengine", "reportingInstance": "draengine-e2e"}
