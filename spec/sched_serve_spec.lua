-- sched_serve_spec.lua - `draengine serve` against the test API server:
-- 1,000 pods through dropped watches, 409/429/500 answers, slow answers and
-- a restart that loses the watch history; a kill -9 in the middle; two
-- replicas with leader election.  Every run ends with the same checks:
-- every pod bound, no device in two claims, no claim lost, no write without
-- a current resourceVersion.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local function bound_count(srv)
  local n = 0
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    if p.spec.nodeName then n = n + 1 end
  end
  return n
end

local function assert_clean(srv, total)
  local bad, counts = S.check(srv)
  assert.are.same({}, bad)
  assert.are.equal(total, counts.total)
  assert.are.equal(total, counts.bound)
  return counts
end

-- Generous: CI runs this under ASan on 2 cores.
local SLOW = H.asan and 3 or 1

describe("draengine serve", function()
  local srv, procs
  before_each(function()
    srv = K.start{ bookmark_ms = 300, seed = 11 }
    procs = {}
  end)
  after_each(function()
    local reports = S.stop_all(procs, 4000)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function serve(args)
    local p = S.start(srv, args or { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--watch-backoff=50ms", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s", "--jitter-seed=7" })
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    return p
  end

  it("binds 1,000 pods through dropped watches, 409/429/500, slow answers and a restart", function()
    srv:load(S.cluster(90, 8))
    local pods, claims = S.workload(1000)
    srv:load(claims)
    srv:faults{ conflict_rate = 0.04, error_rate = 0.02,
      rules = { { method = "PUT", status = 429, retry_after = 1, count = 2 },
        { method = "POST", path = "binding", status = 409, count = 3 } } }
    local p = serve()
    for i = 1, #pods, 100 do
      local batch = {}
      for j = i, math.min(i + 99, #pods) do batch[#batch + 1] = pods[j] end
      srv:load(batch)
      if i == 201 or i == 601 then srv:drop() end
      if i == 401 then srv:faults{ slow_ms = 3 } end
      if i == 501 then srv:faults{ slow_ms = 0 } end
      if i == 801 then srv:restart() end
      K.sleep(0.2)
    end
    local done = K.wait_for(function() return bound_count(srv) == #pods end, 90 * SLOW, 0.5)
    assert.is_true(done, "bound " .. bound_count(srv) .. " of " .. #pods .. "\n" .. p:stderr():sub(-3000))
    srv:faults{ conflict_rate = 0, error_rate = 0 }
    local counts = assert_clean(srv, #pods)
    assert.is_true(counts.conflicts > 0, "the run saw no 409 at all")
    assert.are.equal(667, counts.devices)
    -- the scheduler noticed the faults and says so in its metrics
    local st, metrics = p:http("/metrics")
    assert.are.equal(200, st)
    assert.truthy(metrics:find('draengine_scheduler_schedule_attempts_total{result="scheduled"} ', 1, true))
    local relists = tonumber(metrics:match("draengine_kube_relists_total (%d+)"))
    assert.is_true(relists >= 1)
    local conflicts = tonumber(metrics:match('draengine_kube_api_errors_total{kind="conflict"} (%d+)'))
    assert.is_true(conflicts >= 1)
  end)

  it("converges after kill -9 and a restart", function()
    srv:load(S.cluster(30, 8))
    local pods, claims = S.workload(300, "k")
    srv:load(claims)
    srv:faults{ conflict_rate = 0.03 }
    local p = serve()
    srv:load(pods)
    K.wait_for(function() return bound_count(srv) >= 60 end, 30 * SLOW, 0.05)
    p:signal("KILL")
    p:wait(10)
    local mid = bound_count(srv)
    assert.is_true(mid < #pods, "finished before the kill; nothing was tested")
    serve()
    local done = K.wait_for(function() return bound_count(srv) == #pods end, 60 * SLOW, 0.5)
    assert.is_true(done, "bound " .. bound_count(srv) .. " of " .. #pods)
    assert_clean(srv, #pods)
  end)

  it("reports unschedulable pods with the allocator's reason, and schedules them when devices appear", function()
    srv:load(S.cluster(1, 2))
    local pods, claims = S.workload(6, "u") -- 4 of them want one GPU each; 2 GPUs exist
    srv:load(claims)
    serve()
    srv:load(pods)
    K.wait_for(function() return bound_count(srv) == 4 end, 20 * SLOW, 0.2)
    assert.are.equal(4, bound_count(srv))
    local evs = srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items
    local failed
    for _, e in ipairs(evs) do if e.reason == "FailedScheduling" then failed = e end end
    assert.truthy(failed, "no FailedScheduling event")
    assert.truthy(failed.note:find("0/1 nodes are available", 1, true), failed.note)
    assert.truthy(failed.note:find("cannot allocate all claims", 1, true), failed.note)
    assert.are.equal("Warning", failed.type)
    -- a new node with GPUs: only the waiting pods are retried, and they fit
    srv:load{ K.node("node-new"), K.slice("node-new", "gpu.example.com", 4) }
    local done = K.wait_for(function() return bound_count(srv) == 6 end, 20 * SLOW, 0.2)
    assert.is_true(done)
    assert_clean(srv, 6)
  end)

  it("deallocates a claim pinned to a node that is gone, unless someone else holds it", function()
    local function pinned(name, reserved)
      local c = K.claim("default", name, "gpu", 1)
      c.status = { allocation = { devices = { results = { { request = "gpu", driver = "gpu.example.com",
        pool = "gone", device = "gpu-0" } } }, nodeSelector = { nodeSelectorTerms = { { matchFields = {
        { key = "metadata.name", operator = "In", values = { "gone" } } } } } } }, reservedFor = reserved }
      return c
    end
    local objs = S.cluster(1, 2)
    objs[#objs + 1] = pinned("stale", nil)
    objs[#objs + 1] = pinned("held", { { resource = "pods", name = "someone", uid = "someone-uid" } })
    srv:load(objs)
    serve()
    srv:load{ K.pod("default", "a", { claims = { { name = "gpu", resourceClaimName = "stale" } } }),
      K.pod("default", "b", { claims = { { name = "gpu", resourceClaimName = "held" } } }) }
    K.wait_for(function() return bound_count(srv) == 1 end, 10 * SLOW, 0.1)
    K.sleep(0.5)
    local a = srv:get("/api/v1/namespaces/default/pods/a")
    local b = srv:get("/api/v1/namespaces/default/pods/b")
    assert.are.equal("node-001", a.spec.nodeName)
    assert.is_nil(b.spec.nodeName)
    local stale = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/stale")
    assert.are.equal("node-001", stale.status.allocation.devices.results[1].pool)
    local held = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/held")
    assert.are.equal("gone", held.status.allocation.devices.results[1].pool)
  end)

  -- Found by the e2e restart spec: kube-apiserver going down refused the
  -- claim's status write, and while it started again it refused the re-read
  -- (403 until its RBAC caches sync).  The next attempt must write the claim
  -- before it binds, not take the in-memory assumption for the server's state.
  it("writes the claim on the next attempt when its write and the re-read both fail", function()
    srv:load(S.cluster(1, 2))
    -- with the finalizer already there, the status write is the only write
    -- and no watch event can bring the server's version in between
    local claim = K.claim("default", "c1", "gpu", 1)
    claim.metadata.finalizers = { "resource.kubernetes.io/delete-protection" }
    srv:load{ claim }
    srv:faults{ rules = {
      { method = "PUT", path = "resourceclaims/c1/status", status = 403, count = 1 },
      { method = "GET", path = "resourceclaims/c1$", status = 403, count = 3 } } }
    serve()
    srv:load{ K.pod("default", "p1", { claims = { { name = "gpu", resourceClaimName = "c1" } } }) }
    K.wait_for(function() return bound_count(srv) == 1 end, 10 * SLOW, 0.1)
    local c1 = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1")
    local p1 = srv:get("/api/v1/namespaces/default/pods/p1")
    assert.are.equal("node-001", p1.spec.nodeName)
    assert.truthy(c1.status and c1.status.allocation, "bound pod's claim is not allocated")
    assert.are.equal(p1.metadata.uid, c1.status.reservedFor[1].uid)
    local puts = 0
    for _, w in ipairs(srv:writes()) do
      if w.method == "PUT" and w.path:find("resourceclaims/c1/status", 1, true) then puts = puts + 1 end
    end
    assert.are.equal(2, puts) -- the refused one and the one that landed
    assert_clean(srv, 1)
  end)

  it("respects node selectors, taints and cpu", function()
    local full = K.node("full", nil, nil)
    full.status.allocatable.cpu = "100m"
    local tainted = K.node("tainted")
    tainted.spec = { taints = { { key = "dedicated", value = "x", effect = "NoSchedule" } } }
    local cordoned = K.node("cordoned")
    cordoned.spec = { unschedulable = true }
    local labelled = K.node("labelled", { disk = "ssd" })
    srv:load{ full, tainted, cordoned, labelled, K.node("plain") }
    serve()
    srv:load{
      K.pod("default", "wants-ssd", { node_selector = { disk = "ssd" } }),
      K.pod("default", "tolerates", { tolerations = { { key = "dedicated", operator = "Exists" } },
        node_selector = { ["kubernetes.io/hostname"] = "tainted" } }),
      K.pod("default", "big", { requests = { cpu = "1" }, node_selector = { ["kubernetes.io/hostname"] = "full" } }),
      K.pod("default", "other-scheduler", { scheduler = "default-scheduler" }),
    }
    K.wait_for(function() return bound_count(srv) == 2 end, 10 * SLOW, 0.2)
    K.sleep(0.5)
    local where = {}
    for _, p in ipairs(srv:get("/api/v1/pods").items) do where[p.metadata.name] = p.spec.nodeName or "-" end
    assert.are.same({ ["wants-ssd"] = "labelled", tolerates = "tainted", big = "-", ["other-scheduler"] = "-" }, where)
  end)

  it("serves /livez, /readyz and Prometheus /metrics", function()
    srv:load(S.cluster(2, 2))
    local p = serve()
    K.wait_for(function() return p:http("/readyz") == 200 end, 10 * SLOW, 0.1)
    local st, body = p:http("/livez")
    assert.are.equal(200, st)
    assert.are.equal("ok", body)
    st, body = p:http("/readyz?verbose")
    assert.are.equal(200, st)
    assert.truthy(body:find("[+]informer-synced ok", 1, true))
    assert.truthy(body:find("[+]policies-loaded ok", 1, true))
    assert.truthy(body:find("readyz check passed", 1, true))
    st = p:http("/readyz/informer-synced")
    assert.are.equal(200, st)
    st = p:http("/nope")
    assert.are.equal(404, st)
    st, body = p:http("/metrics")
    assert.are.equal(200, st)
    assert.truthy(body:find("# TYPE draengine_scheduler_pending_pods gauge", 1, true))
    assert.truthy(body:find('draengine_scheduler_scheduling_attempt_duration_seconds_bucket{le="+Inf"}', 1, true))
    assert.truthy(body:find('draengine_kube_api_requests_total{code="2xx"}', 1, true))
  end)

  it("is not ready before its informers have synced", function()
    srv:faults{ slow_ms = 1500 }
    local p = serve()
    local st, body = p:http("/readyz?verbose")
    assert.are.equal(500, st)
    assert.truthy(body:find("[-]informer-synced failed", 1, true))
    srv:faults{ slow_ms = 0 }
  end)

  it("requeues only the pods an event affects (claim -> waiting pods index)", function()
    srv:load(S.cluster(2, 8))
    local pods = {}
    for i = 1, 40 do
      pods[i] = K.pod("default", "w" .. i, { claims = { { name = "gpu", resourceClaimName = "late-" .. i } } })
    end
    local p = serve()
    srv:load(pods)
    local function metric(name)
      local _, m = p:http("/metrics")
      return tonumber(m:match(name:gsub("[%[%]%(%)%.%-\"{}=]", "%%%0") .. " (%d+)"))
    end
    K.wait_for(function() return metric('draengine_scheduler_pending_pods{queue="unschedulable"}') == 40 end, 10 * SLOW, 0.1)
    assert.are.equal(40, metric('draengine_scheduler_pending_pods{queue="unschedulable"}'))
    -- waiting for a claim is kube-scheduler's PreEnqueue gate: no FailedScheduling Event
    for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items) do
      assert.are_not.equal("FailedScheduling", e.reason, e.note)
    end
    local before = metric('draengine_scheduler_queue_incoming_pods_total{event="index"}')
    srv:load{ K.claim("default", "late-7", "gpu", 1) }
    K.wait_for(function() return bound_count(srv) == 1 end, 10 * SLOW, 0.1)
    assert.are.equal(1, bound_count(srv))
    assert.are.equal("w7", (function()
      for _, q in ipairs(srv:get("/api/v1/pods").items) do if q.spec.nodeName then return q.metadata.name end end
    end)())
    -- exactly one pod left the unschedulable queue for that claim
    assert.are.equal(before + 1, metric('draengine_scheduler_queue_incoming_pods_total{event="index"}'))
    assert.are.equal(39, metric('draengine_scheduler_pending_pods{queue="unschedulable"}'))
  end)

  it("logs klog JSON lines with --logging-format=json", function()
    srv:load(S.cluster(1, 1))
    local p = serve({ "--leader-elect=false", "--logging-format=json", "-v", "2" })
    srv:load{ K.pod("default", "j1") }
    K.wait_for(function() return bound_count(srv) == 1 end, 10 * SLOW, 0.1)
    K.sleep(0.2)
    local n = 0
    for line in p:stderr():gmatch("[^\n]+") do
      if line:sub(1, 1) == "{" then
        local o = require("draengine.core").json_decode(line)
        assert.is_number(o.ts)
        assert.is_string(o.caller)
        assert.truthy(o.msg or o.err)
        n = n + 1
      end
    end
    assert.is_true(n >= 3)
  end)

  it("refuses bad flags with exit code 2 and documents every flag in --help", function()
    local rc, out = H.run({ "serve", "--help" })
    assert.are.equal(0, rc)
    for _, f in ipairs({ "--kubeconfig", "--context", "--master", "--kube-api-qps", "--kube-api-burst",
      "--scheduler-name", "--feature-gates", "--leader-elect", "--leader-elect-lease-duration",
      "--leader-elect-renew-deadline", "--leader-elect-retry-period", "--leader-elect-resource-name",
      "--leader-elect-resource-namespace", "--bind-address", "--port", "--logging-format", "-v" }) do
      assert.truthy(out:find(f, 1, true), f)
    end
    local rc2, _, err = H.run({ "serve", "--leader-elect-lease-duration=soon" })
    assert.are.equal(2, rc2)
    assert.truthy(err:find("is not a duration", 1, true))
    rc2, _, err = H.run({ "serve", "--kubeconfig", "/nonexistent/kubeconfig" })
    assert.are.equal(2, rc2)
    assert.truthy(err:find("/nonexistent/kubeconfig", 1, true))
  end)

  it("never logs the token, even at -v 10", function()
    srv:load(S.cluster(2, 1))
    local pods, claims = S.workload(6, "t")
    srv:load(claims)
    srv:faults{ rules = { { method = "GET", path = "nodes", status = 500, count = 1 } } }
    local p = serve({ "--leader-elect=false", "-v", "10", "--watch-backoff=50ms" })
    srv:load(pods)
    K.wait_for(function() return bound_count(srv) >= 2 end, 10 * SLOW, 0.2)
    local log = p:stderr()
    assert.truthy(#log > 0)
    assert.falsy(log:find(srv.token, 1, true))
    assert.truthy(log:find("token=<redacted", 1, true))
  end)
end)

describe("draengine serve --leader-elect", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 5 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs, 4000)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function replica(id)
    local p = S.start(srv, { "--leader-elect", "--leader-elect-identity=" .. id,
      "--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms",
      "--leader-elect-retry-period=200ms", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--pod-initial-backoff=100ms" })
    procs[#procs + 1] = p
    return p
  end

  it("schedules with one leader at a time and hands over on SIGTERM", function()
    srv:load(S.cluster(10, 8))
    local a = replica("replica-a")
    K.wait_for(function()
      local st, l = srv:request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/draengine")
      return st == 200 and l.spec.holderIdentity == "replica-a"
    end, 10, 0.1)
    local b = replica("replica-b")
    local pods, claims = S.workload(60, "a")
    srv:load(claims)
    srv:load(pods)
    K.wait_for(function() return bound_count(srv) == 60 end, 30, 0.2)
    assert.are.equal(60, bound_count(srv))
    -- the follower wrote nothing but Lease reads
    local st, lease = srv:request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/draengine")
    assert.are.equal("replica-a", lease.spec.holderIdentity)
    a:signal("TERM")
    assert.are.equal(0, a:wait(10))
    local pods2, claims2 = S.workload(30, "b")
    srv:load(claims2)
    srv:load(pods2)
    K.wait_for(function() return bound_count(srv) == 90 end, 30, 0.2)
    assert.are.equal(90, bound_count(srv))
    st, lease = srv:request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/draengine")
    assert.are.equal("replica-b", lease.spec.holderIdentity)
    assert.is_true(lease.spec.leaseTransitions >= 1)
    -- bindings never overlapped: every binding by a came before every binding by b
    local last_a, first_b = 0, math.huge
    for _, w in ipairs(srv:writes()) do
      if w.subresource == "binding" and w.status == 201 then
        if w.userAgent:find("replica-a", 1, true) then last_a = math.max(last_a, w.time) end
        if w.userAgent:find("replica-b", 1, true) then first_b = math.min(first_b, w.time) end
      end
    end
    assert.is_true(last_a < first_b)
    assert_clean(srv, 90)
    assert.truthy(b:alive())
  end)
end)
