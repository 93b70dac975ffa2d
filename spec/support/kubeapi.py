#!/usr/bin/env python3
"""kubeapi.py - a Kubernetes API server for draengine's specs.

It speaks the real wire protocol over HTTPS on loopback with a CA it
generates: REST paths for every kind draengine reads or writes, the status
subresource, resourceVersion with 409 on stale writes, list paging with
limit/continue, watch streams (chunked newline-delimited JSON) with
bookmarks and 410 for versions older than its history, pods/binding, leases
and events.  It also plays the resource claim controller (claims from
templates, named like the real one) unless told not to, and on request a
DRA driver that reports device binding conditions (POST /_test/driver):
when a claim's allocation names its devices with bindingConditions, it
writes status.devices for them after a delay - every binding condition
True ("ready"), a bindingFailureConditions condition True ("fail"), or
nothing ("none").

Faults on demand (POST /_test/faults): connections dropped mid-watch, any
error status (with the Status reason and message a rule gives, or a raw
non-JSON body), 429 with Retry-After, slow answers (all, or one request a
rule with delay_ms and no status matches), a restart that loses the
watch history; watches that end at once ("stream": empty, one_event,
garbage, error410, error500, drop), lists that page forever ("list":
endless, repeat, same_items) and huge lists streamed as they are generated
("list": huge, with items and item_bytes).  GET /_test/stats counts requests per
resource and verb.  Every write from a client is recorded with the
resourceVersion it carried and whether that was current, with the times
its request arrived ("start") and was answered ("time") (GET /_test/writes).
Requests carrying "X-Test-Bypass: 1" (the specs' own set-up) skip faults and
are not recorded.

Python standard library only (http.server, ssl, threading) plus the openssl
command for the certificates.
"""
import argparse
import base64
import copy
import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# plural -> (group/version, kind, namespaced)
RESOURCES = {
    ("", "v1", "pods"): ("Pod", True),
    ("", "v1", "nodes"): ("Node", False),
    ("", "v1", "namespaces"): ("Namespace", False),
    ("resource.k8s.io", "v1", "resourceslices"): ("ResourceSlice", False),
    ("resource.k8s.io", "v1", "deviceclasses"): ("DeviceClass", False),
    ("resource.k8s.io", "v1", "resourceclaims"): ("ResourceClaim", True),
    ("resource.k8s.io", "v1", "resourceclaimtemplates"): ("ResourceClaimTemplate", True),
    ("resource.k8s.io", "v1", "devicetaintrules"): ("DeviceTaintRule", False),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True),
    ("events.k8s.io", "v1", "events"): ("Event", True),
    ("scheduling.k8s.io", "v1beta1", "podgroups"): ("PodGroup", True),
    ("resource.k8s.io", "v1alpha3", "resourcepoolstatusrequests"): ("ResourcePoolStatusRequest", False),
}
STATUS_SUB = {"pods", "resourceclaims", "nodes", "resourcepoolstatusrequests"}
KIND_TO_RES = {v[0]: k for k, v in RESOURCES.items()}
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
FINALIZER = "resource.kubernetes.io/delete-protection"


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def status_obj(code, reason, message, details=None):
    o = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        o["details"] = details
    return o


DEFAULT_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                   409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
                   500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable",
                   504: "Timeout"}


class RawAnswer(Exception):
    """An answer that is not a Status: an HTML error page from a proxy, garbage."""
    def __init__(self, code, body, ctype):
        super().__init__(body)
        self.code, self.body, self.ctype = code, body, ctype


class ApiError(Exception):
    def __init__(self, code, reason, message, headers=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.headers = headers or {}


class Store:
    def __init__(self, seed, claim_controller):
        self.cv = threading.Condition()
        self.rv = 1000
        self.objs = {r: {} for r in RESOURCES}
        self.history = []          # (rv, res, type, json text, ns)
        self.hist_base = 0         # absolute index of history[0]
        self.compacted = 0         # watches from a version <= this get 410
        self.epoch = 0             # bumped to drop every watch
        self.writes = []
        self.rng = random.Random(seed)
        self.claim_controller = claim_controller
        self.snapshots = {}
        self.faults = {"rules": [], "conflict_rate": 0.0, "error_rate": 0.0, "slow_ms": 0,
                       "watch_gone": 0, "gone_mode": "event", "expire_continue": 0,
                       "warnings": 0}
        self.valid_tokens = set()
        self.drivers = {}          # driver -> {"mode": ready|fail|none, "delay_ms": n}
        self.valid_basic = set()   # "user:password"
        self.stats = {"requests": 0, "watches": 0, "lists": 0, "active_watches": 0,
                      "gone": 0, "dropped": 0, "auth_failures": 0, "tokens_seen": {},
                      "basic_seen": 0, "by_res": {}, "alpn": {}}

    # -- events ---------------------------------------------------------------
    def _emit(self, res, typ, obj):
        ns = obj.get("metadata", {}).get("namespace", "")
        self.history.append((int(obj["metadata"]["resourceVersion"]), res, typ,
                             json.dumps({"type": typ, "object": obj}, separators=(",", ":")), ns))
        if len(self.history) > 400000:
            cut = len(self.history) - 300000
            self.compacted = max(self.compacted, self.history[cut - 1][0])
            del self.history[:cut]
            self.hist_base += cut
        self.cv.notify_all()

    def _bump(self, obj):
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def gen_name(self, prefix):
        return prefix + "".join(self.rng.choice(NAME_CHARS) for _ in range(5))

    # -- CRUD (caller holds cv) ---------------------------------------------------
    def create(self, res, ns, obj):
        kind, namespaced = RESOURCES[res]
        md = obj.setdefault("metadata", {})
        if namespaced:
            if md.get("namespace") and ns and md["namespace"] != ns:
                raise ApiError(400, "BadRequest", "the namespace of the object does not match the namespace on the request")
            md["namespace"] = ns or md.get("namespace") or "default"
        else:
            md.pop("namespace", None)
        if not md.get("name"):
            if not md.get("generateName"):
                raise ApiError(422, "Invalid", "metadata.name: Required value: name or generateName is required")
            for _ in range(20):
                md["name"] = self.gen_name(md["generateName"])
                if (md.get("namespace", ""), md["name"]) not in self.objs[res]:
                    break
        key = (md.get("namespace", ""), md["name"])
        if key in self.objs[res]:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res[2], md["name"]))
        md["uid"] = md.get("uid") or str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        md.setdefault("creationTimestamp", now_rfc3339())
        obj["kind"], obj["apiVersion"] = kind, (res[0] + "/" + res[1]) if res[0] else res[1]
        md.pop("deletionTimestamp", None)
        self._bump(obj)
        self.objs[res][key] = obj
        self._emit(res, "ADDED", obj)
        if res[2] == "pods" and self.claim_controller:
            self._claims_for_pod(obj)
        return obj

    def get(self, res, ns, name):
        o = self.objs[res].get((ns if RESOURCES[res][1] else "", name))
        if o is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (res[2], name))
        return o

    def _check_rv(self, cur, obj, res):
        sent = obj.get("metadata", {}).get("resourceVersion")
        if sent and sent != cur["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict",
                           'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                           "please apply your changes to the latest version and try again"
                           % (res[2], cur["metadata"]["name"]))

    def update(self, res, ns, name, obj, sub):
        cur = self.get(res, ns, name)
        self._check_rv(cur, obj, res)
        new = copy.deepcopy(cur)
        if sub == "status":
            new["status"] = obj.get("status", {})
            if res[2] == "resourceclaims":
                self._validate_claim_status(cur, new)
        else:
            md = obj.get("metadata", {})
            for k in ("labels", "annotations", "finalizers", "ownerReferences"):
                if k in md:
                    new["metadata"][k] = md[k]
                else:
                    new["metadata"].pop(k, None)
            if res[2] in ("resourceclaims", "resourceclaimtemplates"):
                if obj.get("spec", cur.get("spec")) != cur.get("spec"):
                    raise ApiError(422, "Invalid", "spec: Invalid value: field is immutable")
            elif "spec" in obj:
                new["spec"] = obj["spec"]
            if res[2] not in STATUS_SUB and "status" in obj:
                new["status"] = obj["status"]
        out = self._store_update(res, cur, new)
        self.driver_react(res, out)
        return out

    def _store_update(self, res, cur, new):
        md = new["metadata"]
        key = (md.get("namespace", ""), md["name"])
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            self._bump(new)
            del self.objs[res][key]
            self._emit(res, "DELETED", new)
            return new
        self._bump(new)
        self.objs[res][key] = new
        self._emit(res, "MODIFIED", new)
        return new

    # -- a DRA driver reporting binding conditions (caller holds cv) -------------------
    def driver_react(self, res, obj):
        if res[2] != "resourceclaims" or not self.drivers:
            return
        st = obj.get("status") or {}
        done = {(d.get("driver"), d.get("pool"), d.get("device")) for d in st.get("devices") or []}
        todo = []
        for r in ((st.get("allocation") or {}).get("devices") or {}).get("results") or []:
            rule = self.drivers.get(r.get("driver"))
            if not rule or rule["mode"] == "none" or not r.get("bindingConditions"):
                continue
            if (r.get("driver"), r.get("pool"), r.get("device")) not in done:
                todo.append((rule, dict(r)))
        if not todo:
            return
        md = obj["metadata"]
        delay = max(rule["delay_ms"] for rule, _ in todo) / 1000.0
        t = threading.Timer(delay, self._driver_write, (md.get("namespace", ""), md["name"], md.get("uid"), todo))
        t.daemon = True
        t.start()

    def _driver_write(self, ns, name, uid, todo):
        with self.cv:
            res = KIND_TO_RES["ResourceClaim"]
            cur = self.objs[res].get((ns, name))
            if cur is None or cur["metadata"].get("uid") != uid or not (cur.get("status") or {}).get("allocation"):
                return
            new = copy.deepcopy(cur)
            devs = new["status"].setdefault("devices", [])
            have = {(d.get("driver"), d.get("pool"), d.get("device")) for d in devs}
            for rule, r in todo:
                key = (r.get("driver"), r.get("pool"), r.get("device"))
                if key in have:
                    continue
                conds = []
                if rule["mode"] == "fail" and r.get("bindingFailureConditions"):
                    conds.append({"type": r["bindingFailureConditions"][0], "status": "True",
                                  "reason": "AttachFailed", "message": "the fabric refused the device",
                                  "lastTransitionTime": now_rfc3339()})
                else:
                    for c in r["bindingConditions"]:
                        conds.append({"type": c, "status": "True", "reason": "Attached",
                                      "message": "device attached to the node", "lastTransitionTime": now_rfc3339()})
                devs.append({"driver": key[0], "pool": key[1], "device": key[2], "conditions": conds})
            self._store_update(res, cur, new)

    def _validate_claim_status(self, cur, new):
        st = new.get("status") or {}
        rf = st.get("reservedFor") or []
        if len(rf) > 256:
            raise ApiError(422, "Invalid", "status.reservedFor: Too many: %d: must have at most 256 items" % len(rf))
        if rf and not st.get("allocation"):
            raise ApiError(422, "Invalid", "status.reservedFor: Forbidden: may not be specified when `allocated` is not set")
        old = (cur.get("status") or {}).get("allocation")
        if old and st.get("allocation") and old != st.get("allocation"):
            raise ApiError(422, "Invalid", "status.allocation: Invalid value: field is immutable")
        if cur["metadata"].get("deletionTimestamp"):
            oldrf = {r.get("uid") for r in (cur.get("status") or {}).get("reservedFor") or []}
            if any(r.get("uid") not in oldrf for r in rf):
                raise ApiError(422, "Invalid", "status.reservedFor: Forbidden: new entries may not be added while `deletionTimestamp` is set")

    def delete(self, res, ns, name):
        cur = self.get(res, ns, name)
        if cur["metadata"].get("finalizers"):
            if not cur["metadata"].get("deletionTimestamp"):
                new = copy.deepcopy(cur)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                return self._store_update(res, cur, new)
            return cur
        new = copy.deepcopy(cur)
        self._bump(new)
        del self.objs[res][(new["metadata"].get("namespace", ""), name)]
        self._emit(res, "DELETED", new)
        return new

    def bind(self, ns, name, body):
        cur = self.get(("", "v1", "pods"), ns, name)
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != cur["metadata"]["uid"]:
            raise ApiError(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"%s\": Precondition failed: UID in precondition: %s, UID in object meta: %s" % (name, uid, cur["metadata"]["uid"]))
        node = (body.get("target") or {}).get("name")
        if not node:
            raise ApiError(422, "Invalid", "target.name: Required value")
        if cur.get("spec", {}).get("nodeName"):
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "%s": pod %s is already assigned to node "%s"' % (name, name, cur["spec"]["nodeName"]))
        new = copy.deepcopy(cur)
        new["spec"]["nodeName"] = node
        conds = new.setdefault("status", {}).setdefault("conditions", [])
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()})
        return self._store_update(("", "v1", "pods"), cur, new)

    # -- the resource claim controller ------------------------------------------
    def _claims_for_pod(self, pod):
        ns = pod["metadata"]["namespace"]
        statuses = []
        group = None
        gname = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if gname:
            group = self.objs[("scheduling.k8s.io", "v1beta1", "podgroups")].get((ns, gname))
        for ref in pod.get("spec", {}).get("resourceClaims") or []:
            tn = ref.get("resourceClaimTemplateName")
            if not tn:
                continue
            if group is not None and any(
                    e.get("name") == ref.get("name") and e.get("resourceClaimTemplateName") == tn
                    for e in (group.get("spec") or {}).get("resourceClaims") or []):
                continue  # the PodGroup's claim, created once per group (KEP-5729)
            tmpl = self.objs[("resource.k8s.io", "v1", "resourceclaimtemplates")].get((ns, tn))
            if tmpl is None:
                continue  # the real controller retries; specs create templates first
            pn, cn = pod["metadata"]["name"], ref["name"]
            base = pn + "-" + cn + "-"
            if len(base) > 57:  # both parts cut in proportion, as the claim controller does
                base = pn[:len(pn) * 57 // len(base)] + "-" + cn[:len(cn) * 57 // len(base)]
            tmd = (tmpl.get("spec") or {}).get("metadata") or {}
            claim = {"metadata": {"generateName": base, "namespace": ns,
                                  "labels": dict(tmd.get("labels") or {}),
                                  "annotations": dict(tmd.get("annotations") or {}),
                                  "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pn,
                                                       "uid": pod["metadata"]["uid"], "controller": True}]},
                     "spec": copy.deepcopy((tmpl.get("spec") or {}).get("spec") or {})}
            claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] = cn
            c = self.create(("resource.k8s.io", "v1", "resourceclaims"), ns, claim)
            statuses.append({"name": cn, "resourceClaimName": c["metadata"]["name"]})
        if statuses:
            new = copy.deepcopy(pod)
            new.setdefault("status", {})["resourceClaimStatuses"] = statuses
            self._store_update(("", "v1", "pods"), pod, new)


STORE = None
ARGS = None


def parse_path(path):
    """-> (res, ns, name, sub) or raises 404."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    res = (group, version, rest[0])
    if res not in RESOURCES:
        raise ApiError(404, "NotFound", "the server could not find the requested resource (%s)" % path)
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if not RESOURCES[res][1] and ns:
        raise ApiError(404, "NotFound", "cluster-scoped resource under a namespace")
    return res, ns, name, sub


def merge_patch(target, patch, strategic=False):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif strategic and isinstance(v, list) and isinstance(out.get(k), list) and \
                any(isinstance(i, dict) and "$patch" in i for i in v):
            drop = {i.get("uid") for i in v if isinstance(i, dict) and i.get("$patch") == "delete"}
            out[k] = [i for i in out[k] if not (isinstance(i, dict) and i.get("uid") in drop)]
        else:
            out[k] = merge_patch(out.get(k), v, strategic)
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubeapi-test/1.0"

    def setup(self):
        self.request.settimeout(30)
        try:
            self.request.do_handshake()
            # with --alpn-h2: which protocol each connection's client chose
            if ARGS.alpn_h2:
                proto = self.request.selected_alpn_protocol() or "none"
                with STORE.cv:
                    STORE.stats["alpn"][proto] = STORE.stats["alpn"].get(proto, 0) + 1
        except (ssl.SSLError, OSError):
            pass
        self.request.settimeout(None)
        super().setup()

    def log_message(self, fmt, *args):  # quiet
        if ARGS.verbose:
            sys.stderr.write("kubeapi: " + (fmt % args) + "\n")

    # -- plumbing -----------------------------------------------------------------
    def _send_json(self, code, obj, headers=None):
        data = json.dumps(obj, separators=(",", ":")).encode()
        warn = False
        if self.command != "GET" and not self.path.startswith("/_test/") and \
                not self.headers.get("X-Test-Bypass"):
            with STORE.cv:
                if STORE.faults["warnings"] > 0:
                    STORE.faults["warnings"] -= 1
                    warn = True
        self.send_response(code)
        if warn:
            # as the real server answers fieldValidation=Warn with an unknown field
            self.send_header("Warning", '299 - "unknown field \\"spec.injected\\" (injected)"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e):
        self._send_json(e.code, status_obj(e.code, e.reason, e.message), e.headers)

    def _open_stream(self):
        """Start a 200 answer in chunked encoding (a watch, or a list
        streamed as it is generated)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, s):
        b = s.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid JSON body")

    def _auth(self):
        h = self.headers.get("Authorization") or ""
        if h.startswith("Bearer "):
            tok = h[7:]
            with STORE.cv:
                STORE.stats["tokens_seen"][tok] = STORE.stats["tokens_seen"].get(tok, 0) + 1
                ok = tok in STORE.valid_tokens
            if ok:
                return "token"
        if h.startswith("Basic "):
            try:
                cred = base64.b64decode(h[6:], validate=True).decode()
            except (ValueError, UnicodeDecodeError):
                cred = None
            with STORE.cv:
                STORE.stats["basic_seen"] += 1
                ok = cred is not None and cred in STORE.valid_basic
            if ok:
                return "basic"
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            cert = None
        if cert:
            return "cert"
        with STORE.cv:
            STORE.stats["auth_failures"] += 1
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        self._t_start = time.time()
        u = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
        try:
            if u.path.startswith("/_test/"):
                return self._control(method, u.path, q)
            self._auth()
            bypass = self.headers.get("X-Test-Bypass") == "1"
            with STORE.cv:
                STORE.stats["requests"] += 1
                f = STORE.faults
                slow = f["slow_ms"]
            if slow and not bypass:
                time.sleep(slow / 1000.0)
            res, ns, name, sub = parse_path(u.path)
            if not bypass:
                verb = ("watch" if q.get("watch") in ("1", "true") else "list" if name is None else "get") \
                    if method == "GET" else method.lower()
                with STORE.cv:
                    per = STORE.stats["by_res"].setdefault(res[2], {})
                    per[verb] = per.get(verb, 0) + 1
            if method == "GET" and name is None and q.get("watch") in ("1", "true"):
                return self._watch(res, ns, q, bypass)
            if method == "GET":
                return self._get(res, ns, name, sub, q, bypass)
            body = self._body()
            return self._write(method, res, ns, name, sub, body, bypass)
        except ApiError as e:
            self._error(e)
        except RawAnswer as a:
            data = a.body.encode()
            self.send_response(a.code)
            self.send_header("Content-Type", a.ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout):
            self.close_connection = True

    # -- faults ---------------------------------------------------------------------
    def _take_rule(self, method, path, watch):
        """A queued fault rule for this request, or None (caller holds cv)."""
        for r in STORE.faults["rules"]:
            if r["count"] <= 0:
                continue
            if r.get("method") and r["method"] != method:
                continue
            if r.get("path") and not re.search(r["path"], path):
                continue
            if bool(r.get("watch", False)) != watch:
                continue
            r["count"] -= 1
            return r
        return None

    def _maybe_fault(self, method, path, watch, bypass):
        if bypass:
            return
        with STORE.cv:
            r = self._take_rule(method, path, watch)
            if r is None and method != "GET" and not watch:
                x = STORE.rng.random()
                if x < STORE.faults["conflict_rate"]:
                    r = {"status": 409}
                elif x < STORE.faults["conflict_rate"] + STORE.faults["error_rate"]:
                    r = {"status": 500}
        if r is None:
            return None
        if r.get("delay_ms") and "status" not in r:  # a slow answer to this one request
            time.sleep(r["delay_ms"] / 1000.0)
            return None
        if r.get("stream") or r.get("list"):
            return r  # a misbehaving watch or list: the caller plays it
        code = r["status"]
        if "body" in r:
            raise RawAnswer(code, r["body"], r.get("content_type", "text/html"))
        if r.get("reason") or r.get("message"):
            hdr = {"Retry-After": str(r["retry_after"])} if "retry_after" in r else None
            raise ApiError(code, r.get("reason") or DEFAULT_REASONS.get(code, "InternalError"),
                           r.get("message") or "injected fault", hdr)
        if code == 409:
            raise ApiError(409, "Conflict", "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected)")
        if code == 410:
            raise ApiError(410, "Expired", "too old resource version (injected)")
        if code == 429:
            raise ApiError(429, "TooManyRequests", "the server has received too many requests and has asked us to try again later (injected)",
                           {"Retry-After": str(r.get("retry_after", 1))})
        if code in (401, 403, 503):
            raise ApiError(code, DEFAULT_REASONS[code], "injected fault")
        raise ApiError(code, "InternalError", "Internal error occurred: injected fault")

    # -- reads ------------------------------------------------------------------------
    def _bad_list(self, res, mode, q):
        """A list that pages forever: no items and a fresh continue token
        (endless), the same token each time (repeat), or the first page's
        items again and again under fresh tokens (same_items)."""
        with STORE.cv:
            STORE.stats["lists"] += 1
            kind = RESOURCES[res][0]
            items = []
            if mode == "same_items":
                keys = sorted(STORE.objs[res])[:max(1, int(q.get("limit") or 1))]
                items = [dict(STORE.objs[res][k]) for k in keys]
            tok = "same-token" if mode == "repeat" else uuid.uuid4().hex
            body = {"kind": kind + "List", "apiVersion": (res[0] + "/" + res[1]) if res[0] else res[1],
                    "metadata": {"resourceVersion": str(STORE.rv), "continue": tok}, "items": items}
        self._send_json(200, body)

    def _huge_list(self, res, n, size):
        """One page of n generated objects of `size` bytes each, streamed in
        chunks as it is generated (never held whole): a list far larger than
        a client should buffer."""
        with STORE.cv:
            STORE.stats["lists"] += 1
            rv = STORE.rv
        kind = RESOURCES[res][0]
        self._open_stream()
        chunk = self._chunk
        chunk('{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"%d"},"items":['
              % (kind, (res[0] + "/" + res[1]) if res[0] else res[1], rv))
        blob = "x" * size
        for i in range(n):
            chunk(("," if i else "") + json.dumps({"metadata": {"name": "huge-%06d" % i, "resourceVersion": str(rv)},
                                                   "spec": {"blob": blob}}, separators=(",", ":")))
        chunk("]}")
        self.wfile.write(b"0\r\n\r\n")

    def _bad_watch(self, res, mode):
        """A watch that ends at once, in one of several ways."""
        with STORE.cv:
            STORE.stats["watches"] += 1
            rv = STORE.rv
        self._open_stream()
        self.close_connection = True

        def chunk(s):
            self._chunk(s + "\n")

        if mode == "one_event":
            chunk(json.dumps({"type": "BOOKMARK", "object": {"kind": RESOURCES[res][0],
                              "metadata": {"resourceVersion": str(rv)}}}))
        elif mode == "garbage":
            chunk("<html>502 Bad Gateway</html>")
        elif mode == "error410":
            chunk(json.dumps({"type": "ERROR", "object": status_obj(410, "Expired", "too old resource version (injected)")}))
        elif mode == "error500":
            chunk(json.dumps({"type": "ERROR", "object": status_obj(500, "InternalError", "etcd leader changed (injected)")}))
        if mode == "drop":
            self.wfile.flush()
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(b"0\r\n\r\n")

    def _get(self, res, ns, name, sub, q, bypass):
        rule = self._maybe_fault("GET", self.path, False, bypass)
        if rule and rule.get("list") == "huge" and name is None:
            return self._huge_list(res, int(rule.get("items", 1000)), int(rule.get("item_bytes", 1024)))
        if rule and rule.get("list") and name is None:
            return self._bad_list(res, rule["list"], q)
        with STORE.cv:
            if name is not None:
                return self._send_json(200, STORE.get(res, ns, name))
            STORE.stats["lists"] += 1
            kind = RESOURCES[res][0]
            limit = int(q.get("limit") or 0)
            cont = q.get("continue")
            if cont:
                try:
                    tok = json.loads(base64.b64decode(cont))
                    snap = STORE.snapshots[tok["id"]]
                    start = tok["start"]
                except (ValueError, KeyError, TypeError):
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
                if STORE.faults["expire_continue"] > 0 and not bypass:
                    STORE.faults["expire_continue"] -= 1
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter. (injected)")
                rv, items = snap
            else:
                keys = sorted(k for k in STORE.objs[res] if not ns or k[0] == ns)
                items = [STORE.objs[res][k] for k in keys]
                rv, start = STORE.rv, 0
            page = items[start:start + limit] if limit else items[start:]
            md = {"resourceVersion": str(rv)}
            nxt = start + len(page)
            if limit and nxt < len(items):
                sid = uuid.uuid4().hex
                STORE.snapshots[sid] = (rv, items)
                md["continue"] = base64.b64encode(json.dumps({"id": sid, "start": nxt}).encode()).decode()
                md["remainingItemCount"] = len(items) - nxt
            out = []
            for o in page:
                o = dict(o)
                o.pop("kind", None)
                o.pop("apiVersion", None)
                out.append(o)
            body = {"kind": kind + "List", "apiVersion": (res[0] + "/" + res[1]) if res[0] else res[1],
                    "metadata": md, "items": out}
        self._send_json(200, body)

    def _watch(self, res, ns, q, bypass):
        rv_s = q.get("resourceVersion") or ""
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(q.get("timeoutSeconds") or 1800)
        rule = self._maybe_fault("GET", self.path, True, bypass)
        if rule and rule.get("stream"):
            return self._bad_watch(res, rule["stream"])
        with STORE.cv:
            STORE.stats["watches"] += 1
            epoch = STORE.epoch
            gone = False
            if STORE.faults["watch_gone"] > 0 and not bypass:
                STORE.faults["watch_gone"] -= 1
                gone = True
            initial = []
            if rv_s in ("", "0"):
                pos = STORE.hist_base + len(STORE.history)
                for k in sorted(STORE.objs[res]):
                    if ns and k[0] != ns:
                        continue
                    initial.append(json.dumps({"type": "ADDED", "object": STORE.objs[res][k]}))
            else:
                try:
                    since = int(rv_s)
                except ValueError:
                    raise ApiError(400, "BadRequest", "invalid resourceVersion")
                if since < STORE.compacted or since > STORE.rv:
                    gone = gone or since < STORE.compacted
                # first history entry newer than `since`
                lo, hi = 0, len(STORE.history)
                while lo < hi:
                    mid = (lo + hi) // 2
                    if STORE.history[mid][0] <= since:
                        lo = mid + 1
                    else:
                        hi = mid
                pos = STORE.hist_base + lo
            mode = STORE.faults["gone_mode"]
            if gone:
                STORE.stats["gone"] += 1
        if gone and mode == "http":
            raise ApiError(410, "Expired", "too old resource version: %s (%d)" % (rv_s, STORE.compacted))
        self._open_stream()
        self.close_connection = True

        def chunk(s):
            self._chunk(s + "\n")

        if gone:
            chunk(json.dumps({"type": "ERROR", "object": status_obj(410, "Expired", "too old resource version: %s (%d)" % (rv_s, STORE.compacted))}))
            self.wfile.write(b"0\r\n\r\n")
            return
        with STORE.cv:
            STORE.stats["active_watches"] += 1
        try:
            for line in initial:
                chunk(line)
            deadline = time.time() + timeout
            next_bm = time.time() + ARGS.bookmark_ms / 1000.0
            while True:
                out = []
                with STORE.cv:
                    while True:
                        if STORE.epoch != epoch:
                            # dropped: close without the final chunk, like a broken connection
                            with_drop = True
                            break
                        with_drop = False
                        idx = pos - STORE.hist_base
                        if idx < 0:  # history trimmed under this watch
                            with_drop = True
                            break
                        if idx < len(STORE.history):
                            for ev in STORE.history[idx:]:
                                if ev[1] == res and (not ns or ev[4] == ns):
                                    out.append(ev[3])
                            pos = STORE.hist_base + len(STORE.history)
                            break
                        t = time.time()
                        if t >= deadline or (bookmarks and t >= next_bm):
                            break
                        STORE.cv.wait(min(deadline, next_bm if bookmarks else deadline) - t)
                    cur_rv = STORE.rv
                if with_drop:
                    with STORE.cv:
                        STORE.stats["dropped"] += 1
                    try:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                for line in out:
                    chunk(line)
                t = time.time()
                if bookmarks and t >= next_bm:
                    chunk(json.dumps({"type": "BOOKMARK", "object": {
                        "kind": RESOURCES[res][0], "apiVersion": (res[0] + "/" + res[1]) if res[0] else res[1],
                        "metadata": {"resourceVersion": str(cur_rv)}}}))
                    next_bm = t + ARGS.bookmark_ms / 1000.0
                if t >= deadline:
                    self.wfile.write(b"0\r\n\r\n")
                    return
                self.wfile.flush()
        finally:
            with STORE.cv:
                STORE.stats["active_watches"] -= 1

    # -- writes -------------------------------------------------------------------------
    def _record(self, method, res, ns, name, sub, body, code, cur_rv):
        sent = None
        if isinstance(body, dict):
            sent = (body.get("metadata") or {}).get("resourceVersion")
        STORE.writes.append({"method": method, "path": urlsplit(self.path).path,
                             "query": urlsplit(self.path).query, "resource": res[2],
                             "namespace": ns, "name": name, "subresource": sub,
                             "sentResourceVersion": sent, "currentResourceVersion": cur_rv,
                             "status": code, "start": getattr(self, "_t_start", None), "time": time.time(),
                             "userAgent": self.headers.get("User-Agent") or ""})

    def _write(self, method, res, ns, name, sub, body, bypass):
        code, cur_rv = 0, None
        try:
            with STORE.cv:
                if name is not None:
                    cur = STORE.objs[res].get((ns if RESOURCES[res][1] else "", name))
                    cur_rv = cur["metadata"]["resourceVersion"] if cur else None
            self._maybe_fault(method, self.path, False, bypass)
            with STORE.cv:
                if method == "POST" and name is None:
                    if not isinstance(body, dict):
                        raise ApiError(400, "BadRequest", "body required")
                    out = STORE.create(res, ns, body)
                    code = 201
                elif method == "POST" and sub == "binding" and res[2] == "pods":
                    STORE.bind(ns, name, body or {})
                    out, code = status_obj(201, "", ""), 201
                    out["status"] = "Success"
                elif method == "PUT" and name is not None and (sub in (None, "status")):
                    if not isinstance(body, dict):
                        raise ApiError(400, "BadRequest", "body required")
                    if sub == "status" and res[2] not in STATUS_SUB:
                        raise ApiError(404, "NotFound", "no status subresource")
                    bmd = body.get("metadata") or {}
                    if bmd.get("name") and bmd["name"] != name:
                        raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
                    out, code = STORE.update(res, ns, name, body, sub), 200
                elif method == "PATCH" and name is not None:
                    ct = self.headers.get("Content-Type") or ""
                    cur = STORE.get(res, ns, name)
                    want = ((body or {}).get("metadata") or {}).get("uid") if isinstance(body, dict) else None
                    if want and want != cur["metadata"].get("uid"):
                        raise ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                       % (want, cur["metadata"].get("uid")))
                    new = merge_patch(cur, body or {}, strategic="strategic" in ct)
                    if sub == "status":
                        new = dict(copy.deepcopy(cur), status=new.get("status"))
                        new["metadata"]["resourceVersion"] = (body.get("metadata") or {}).get("resourceVersion", "")
                    out, code = STORE.update(res, ns, name, new, sub), 200
                elif method == "DELETE" and name is not None:
                    want = ((body or {}).get("preconditions") or {}).get("uid") if isinstance(body, dict) else None
                    cur = STORE.get(res, ns, name)
                    if want and want != cur["metadata"].get("uid"):
                        raise ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                       % (want, cur["metadata"].get("uid")))
                    out, code = STORE.delete(res, ns, name), 200
                else:
                    raise ApiError(405, "MethodNotAllowed", "method not allowed")
        except ApiError as e:
            code = e.code
            raise
        finally:
            if not bypass:
                with STORE.cv:
                    self._record(method, res, ns, name, sub, body, code, cur_rv)
        self._send_json(code, out)

    # -- control ---------------------------------------------------------------------------
    def _control(self, method, path, q):
        body = self._body() if method != "GET" else None
        with STORE.cv:
            if path == "/_test/writes":
                return self._send_json(200, {"items": STORE.writes})
            if path == "/_test/stats":
                s = dict(STORE.stats)
                s["rv"] = STORE.rv
                s["compacted"] = STORE.compacted
                s["tokens_seen"] = len(STORE.stats["tokens_seen"])
                return self._send_json(200, s)
            if path == "/_test/tokens_seen":
                return self._send_json(200, dict(STORE.stats["tokens_seen"]))
            if path == "/_test/state":
                out = {}
                for r, objs in STORE.objs.items():
                    out[r[2]] = [objs[k] for k in sorted(objs)]
                return self._send_json(200, {"rv": STORE.rv, "objects": out})
            if path == "/_test/faults" and method == "POST":
                b = body or {}
                for k in ("conflict_rate", "error_rate", "slow_ms", "watch_gone", "gone_mode", "expire_continue",
                          "warnings"):
                    if k in b:
                        STORE.faults[k] = b[k]
                for r in b.get("rules") or []:
                    r.setdefault("count", 1)
                    STORE.faults["rules"].append(r)
                if b.get("clear_rules"):
                    STORE.faults["rules"] = []
                return self._send_json(200, STORE.faults)
            if path == "/_test/drop" and method == "POST":
                STORE.epoch += 1
                STORE.cv.notify_all()
                return self._send_json(200, {"epoch": STORE.epoch})
            if path == "/_test/restart" and method == "POST":
                # Lose the watch history (as a restarted apiserver's watch
                # cache does) and every open stream and continue token.
                # Writes by other components while it was down move the
                # version on: every client is now behind and gets 410.
                STORE.epoch += 1
                STORE.rv += 1
                STORE.compacted = STORE.rv
                STORE.hist_base += len(STORE.history)
                STORE.history = []
                STORE.snapshots = {}
                STORE.cv.notify_all()
                return self._send_json(200, {"compacted": STORE.compacted})
            if path == "/_test/tokens" and method == "POST":
                STORE.valid_tokens = set((body or {}).get("valid") or [])
                return self._send_json(200, {"valid": len(STORE.valid_tokens)})
            if path == "/_test/basic" and method == "POST":
                STORE.valid_basic = set((body or {}).get("valid") or [])
                return self._send_json(200, {"valid": len(STORE.valid_basic)})
            if path == "/_test/driver" and method == "POST":
                b = body or {}
                if b.get("mode") not in ("ready", "fail", "none") or not b.get("driver"):
                    raise ApiError(400, "BadRequest", "want {driver, mode: ready|fail|none, delay_ms}")
                STORE.drivers[b["driver"]] = {"mode": b["mode"], "delay_ms": int(b.get("delay_ms") or 0)}
                return self._send_json(200, STORE.drivers)
            if path == "/_test/claim_controller" and method == "POST":
                STORE.claim_controller = bool((body or {}).get("enabled"))
                return self._send_json(200, {"enabled": STORE.claim_controller})
            if path == "/_test/load" and method == "POST":
                n = 0
                for o in (body or {}).get("items") or []:
                    res = KIND_TO_RES.get(o.get("kind"))
                    if res is None:
                        raise ApiError(400, "BadRequest", "unknown kind %r" % o.get("kind"))
                    STORE.create(res, (o.get("metadata") or {}).get("namespace", ""), o)
                    n += 1
                return self._send_json(200, {"created": n, "rv": STORE.rv})
        raise ApiError(404, "NotFound", "no such control endpoint")


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=kubeapi-test-ca", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who, cn in (("server", "localhost"), ("client", "draengine")):
        openssl("req", *ec, "-keyout", who + ".key", "-out", who + ".csr", "-subj", "/CN=" + cn, cwd=d)
        extra = ["-extfile", "san.ext"] if who == "server" else []
        openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", who + ".crt", "-days", "2", *extra, cwd=d)


def write_kubeconfigs(d, cd, port, token):
    server = "https://127.0.0.1:%d" % port
    ca = base64.b64encode(open(os.path.join(cd, "ca.crt"), "rb").read()).decode()
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
           "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority-data": ca}}],
           "users": [{"name": "token", "user": {"token": token}},
                     {"name": "cert", "user": {"client-certificate": os.path.join(cd, "client.crt"),
                                               "client-key": os.path.join(cd, "client.key")}}],
           "contexts": [{"name": "test", "context": {"cluster": "test", "user": "token"}},
                        {"name": "cert", "context": {"cluster": "test", "user": "cert"}}]}
    with open(os.path.join(d, "kubeconfig"), "w") as f:
        json.dump(cfg, f, indent=1)


def main():
    global STORE, ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--token", default="test-token-0123456789abcdef")
    ap.add_argument("--bookmark-ms", type=int, default=1000)
    ap.add_argument("--no-claim-controller", action="store_true")
    ap.add_argument("--cert-dir", help="CA and certificates (made there if missing); default --dir")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--alpn-h2", action="store_true",
                    help="offer h2 as well as http/1.1 in ALPN and count what clients pick "
                         "(stats.alpn; this server itself speaks only HTTP/1.1)")
    ARGS = ap.parse_args()
    d = ARGS.dir
    os.makedirs(d, exist_ok=True)
    cd = ARGS.cert_dir or d
    os.makedirs(cd, exist_ok=True)
    if not os.path.exists(os.path.join(cd, "client.crt")):
        make_certs(cd)
    STORE = Store(ARGS.seed, not ARGS.no_claim_controller)
    STORE.valid_tokens = {ARGS.token}
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(cd, "server.crt"), os.path.join(cd, "server.key"))
    ctx.load_verify_locations(os.path.join(cd, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    if ARGS.alpn_h2:
        ctx.set_alpn_protocols(["h2", "http/1.1"])

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

        def get_request(self):
            sock, addr = super().get_request()
            # Headers and body go out in separate writes: without this,
            # Nagle + delayed ACK add 40 ms to every answer.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

        def handle_error(self, request, client_address):
            pass

    srv = Server(("127.0.0.1", ARGS.port), Handler)
    port = srv.server_address[1]
    write_kubeconfigs(d, cd, port, ARGS.token)
    with open(os.path.join(d, "pid"), "w") as f:
        f.write(str(os.getpid()))
    with open(os.path.join(d, "port.tmp"), "w") as f:  # the readiness marker: last
        f.write(str(port))
    os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
    sys.stdout.write("READY %d\n" % port)
    sys.stdout.flush()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
