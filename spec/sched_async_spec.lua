-- sched_async_spec.lua - `draengine serve --parallel-binds N`: the writes of
-- several pods in flight at once on worker threads (engine/sched/sch_async.c)
-- end as clean as the synchronous path under 409/500/403 answers; a claim
-- shared by pods never has two writes in flight (the test server records
-- when each write arrived and was answered); SIGTERM with writes in flight
-- exits cleanly; the flag is validated.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local function bound_count(srv)
  local n = 0
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    if p.spec.nodeName then n = n + 1 end
  end
  return n
end

-- Client writes (not the test's own) whose [arrived, answered] intervals
-- overlap another one's: pairs, optionally only among writes for which
-- key(w) gives the same non-nil value.
local function overlaps(writes, key)
  local ws = {}
  for _, w in ipairs(writes) do
    if w.start and (not key or key(w)) then ws[#ws + 1] = w end
  end
  table.sort(ws, function(a, b) return a.start < b.start end)
  local out = {}
  for i = 1, #ws do
    for j = i + 1, #ws do
      if ws[j].start >= ws[i].time then break end
      if not key or key(ws[i]) == key(ws[j]) then out[#out + 1] = { ws[i], ws[j] } end
    end
  end
  return out
end

local function claim_of(w)
  if w.resource == "resourceclaims" then return w.name end
end

describe("draengine serve --parallel-binds", function()
  local srv, procs
  before_each(function()
    srv = K.start{ bookmark_ms = 300, seed = 23 }
    procs = {}
  end)
  after_each(function()
    local reports = S.stop_all(procs, 4000)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function serve(n, extra)
    local args = { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--watch-backoff=50ms", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s", "--jitter-seed=7",
      "--parallel-binds=" .. n }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local p = S.start(srv, args)
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    return p
  end

  for _, n in ipairs({ 1, 8 }) do
    it("binds 400 pods with " .. n .. " binding pipeline(s) through 409, 500 and 403 answers", function()
      srv:load(S.cluster(40, 8))
      local pods, claims = S.workload(400, "a" .. n)
      srv:load(claims)
      srv:faults{ conflict_rate = 0.04, error_rate = 0.03, slow_ms = 4,
        rules = {
          { method = "PUT", path = "resourceclaims/.*/status", status = 403, count = 3 },
          { method = "PUT", path = "resourceclaims/[^/]*$", status = 403, count = 2 },
          { method = "POST", path = "binding", status = 403, count = 2 },
          { method = "POST", path = "binding", status = 409, count = 3 },
          { method = "POST", path = "binding", status = 500, count = 3 } } }
      local p = serve(n)
      srv:load(pods)
      local done = K.wait_for(function() return bound_count(srv) == #pods end, 90 * SLOW, 0.5)
      assert.is_true(done, "bound " .. bound_count(srv) .. " of " .. #pods .. "\n" .. p:stderr():sub(-3000))
      srv:faults{ conflict_rate = 0, error_rate = 0, slow_ms = 0 }
      local bad, counts = S.check(srv)
      assert.are.same({}, bad)
      assert.are.equal(#pods, counts.bound)
      assert.are.equal(267, counts.devices)
      assert.is_true(counts.conflicts > 0, "the run saw no 409 at all")
      local writes = srv:writes()
      -- every refused write was answered with the fault asked for
      local seen = {}
      for _, w in ipairs(writes) do seen[w.status] = true end
      assert.is_true(seen[403] and seen[409] and seen[500], "not every fault was exercised")
      -- one claim never had two writes at once
      assert.are.same({}, overlaps(writes, claim_of))
      -- with several pipelines, writes of different pods did overlap
      local any = #overlaps(writes)
      if n == 1 then
        assert.are.equal(0, any)
      else
        assert.is_true(any > 0, "no two writes were ever in flight at once")
      end
      local st, metrics = p:http("/metrics")
      assert.are.equal(200, st)
      assert.truthy(metrics:find('draengine_scheduler_binding_pods{state="binding"} 0', 1, true), metrics)
      local sched = tonumber(metrics:match('draengine_scheduler_schedule_attempts_total{result="scheduled"} (%d+)'))
      assert.are.equal(#pods, sched)
      -- the echoes of its own claim writes came back and were not decoded
      -- (the end state above is checked all the same)
      local echo = tonumber(metrics:match('draengine_scheduler_claim_events_ignored_total{reason="echo"} (%d+)'))
      assert.is_true(echo > 0, metrics)
      local rc = p:stop()
      assert.are.equal(0, rc)
    end)
  end

  it("never writes one shared claim twice at once; pods sharing it wait for the write", function()
    srv:load(S.cluster(4, 8))
    local objs = {}
    for c = 1, 4 do objs[#objs + 1] = K.claim("default", "shared-" .. c, "gpu", 1) end
    for i = 1, 48 do
      local refs = { { name = "gpu", resourceClaimName = "shared-" .. (i % 4 + 1) } }
      objs[#objs + 1] = K.pod("default", string.format("sh-%03d", i), { claims = refs })
    end
    srv:faults{ slow_ms = 20, conflict_rate = 0.05 }
    local p = serve(8)
    srv:load(objs)
    local done = K.wait_for(function() return bound_count(srv) == 48 end, 90 * SLOW, 0.5)
    assert.is_true(done, "bound " .. bound_count(srv) .. " of 48\n" .. p:stderr():sub(-3000))
    srv:faults{ slow_ms = 0, conflict_rate = 0 }
    local bad, counts = S.check(srv)
    assert.are.same({}, bad)
    assert.are.equal(4, counts.devices)
    local writes = srv:writes()
    local per = {}
    for _, w in ipairs(writes) do
      local c = claim_of(w)
      if c and w.status == 200 then per[c] = (per[c] or 0) + 1 end
    end
    -- each claim: finalizer + allocation, then one reservation per further pod
    for c = 1, 4 do assert.is_true((per["shared-" .. c] or 0) >= 13, "claim shared-" .. c) end
    local ov = overlaps(writes, claim_of)
    assert.are.same({}, ov)
    -- the four claims' writes did run side by side
    assert.is_true(#overlaps(writes) > 0, "no two writes were ever in flight at once")
    -- every pod sharing a claim is in its reservedFor
    for _, c in ipairs(srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims").items) do
      assert.are.equal(12, #c.status.reservedFor, c.metadata.name)
    end
  end)

  it("sees a claim written by someone else while its own job wrote it", function()
    -- the echo of serve's own claim writes is dropped undecoded; a newer
    -- write by another client in the same window must still be seen
    srv:load(S.cluster(2, 1))
    srv:load{ K.claim("default", "c", "gpu", 1),
      K.pod("default", "a", { claims = { { name = "gpu", resourceClaimName = "c" } },
        node_selector = { ["kubernetes.io/hostname"] = "node-001" } }) }
    srv:faults{ rules = { { method = "POST", path = "binding", delay_ms = 2500 * SLOW } } }
    local p = serve(8)
    local path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c"
    local written = K.wait_for(function()
      local c = srv:get(path)
      return c.status and c.status.allocation ~= nil
    end, 30 * SLOW, 0.02)
    assert.is_true(written, p:stderr():sub(-2000))
    -- what kube-controller-manager does when the pod goes: the pod is
    -- deleted, the claim released and deallocated - while serve's binding
    -- of the pod is still on its way
    local st, _, err = srv:request("DELETE", "/api/v1/namespaces/default/pods/a")
    assert.are.equal(200, st, err)
    local c = srv:get(path)
    c.status = {}
    st, _, err = srv:request("PUT", path .. "/status", c)
    assert.are.equal(200, st, err)
    -- a new pod for the claim, on the other node: only a scheduler that saw
    -- the claim deallocated can place it there
    srv:load{ K.pod("default", "b", { claims = { { name = "gpu", resourceClaimName = "c" } },
      node_selector = { ["kubernetes.io/hostname"] = "node-002" } }) }
    local bound = K.wait_for(function()
      return srv:get("/api/v1/namespaces/default/pods/b").spec.nodeName == "node-002"
    end, 30 * SLOW, 0.1)
    assert.is_true(bound, p:stderr():sub(-3000))
    c = srv:get(path)
    assert.are.equal("node-002", c.status.allocation.nodeSelector.nodeSelectorTerms[1].matchFields[1].values[1])
    assert.are.equal("b", c.status.reservedFor[1].name)
  end)

  it("finishes the writes in flight on SIGTERM", function()
    srv:load(S.cluster(20, 8))
    local pods, claims = S.workload(200, "t")
    srv:load(claims)
    srv:faults{ slow_ms = 60 }
    local p = serve(8)
    srv:load(pods)
    K.wait_for(function() return bound_count(srv) >= 20 end, 30 * SLOW, 0.05)
    local rc = p:stop()
    assert.are.equal(0, rc)
    local mid = bound_count(srv)
    assert.is_true(mid < #pods, "finished before the stop; nothing was tested")
    srv:faults{ slow_ms = 0 }
    -- a pod whose binding went out is bound, its claims written; a new
    -- replica finishes the rest without writing anything twice
    serve(8)
    local done = K.wait_for(function() return bound_count(srv) == #pods end, 60 * SLOW, 0.5)
    assert.is_true(done, "bound " .. bound_count(srv) .. " of " .. #pods)
    local bad = S.check(srv)
    assert.are.same({}, bad)
  end)

  it("refuses a --parallel-binds out of 1..64", function()
    for _, v in ipairs({ "0", "65", "x", "-1", "" }) do
      local code, _, err = H.run({ "serve", "--parallel-binds=" .. v, "--kubeconfig", srv.kubeconfig })
      assert.are.equal(2, code, v)
      assert.truthy(err:find("--parallel-binds", 1, true), err)
    end
    local code, out = H.run({ "serve", "--help" })
    assert.are.equal(0, code)
    assert.truthy(out:find("--parallel-binds N", 1, true))
  end)
end)
