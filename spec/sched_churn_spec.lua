-- sched_churn_spec.lua - `draengine serve` under churn keeps flat memory:
-- pods and claims with fresh names are created, scheduled and deleted round
-- after round, and the strings interned (draengine_interned_strings on
-- /metrics) come back to the same count after every round.  The scheduler
-- holds the names of the pods and claims it queues, indexes, waits for and
-- writes by reference (engine/sched/sch_int.h), so a deleted object's names
-- go with it.  Each round also has pods that wait for a claim that appears
-- later (the claim index) and pods deleted while they wait for a claim that
-- never appears.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1
local ROUNDS, PER_ROUND = 5, 36

local metric, pods_bound = S.metric, S.pods_bound

-- Delete every pod, then every claim (the delete-protection finalizer is
-- taken off as kube-controller-manager would once the claim is unused).
local function delete_all(srv)
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    local st = srv:request("DELETE", "/api/v1/namespaces/default/pods/" .. p.metadata.name)
    assert(st == 200, "delete pod " .. p.metadata.name)
  end
  local base = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/"
  for _, c in ipairs(srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims").items) do
    local st, cur = srv:request("DELETE", base .. c.metadata.name)
    assert(st == 200, "delete claim " .. c.metadata.name)
    if cur.metadata.finalizers then
      cur.metadata.finalizers = nil
      local err
      st, _, err = srv:request("PUT", base .. c.metadata.name, cur)
      assert(st == 200, "finalizer of claim " .. c.metadata.name .. ": " .. tostring(err))
    end
  end
end

describe("draengine serve under churn", function()
  local t = S.fixture{ bookmark_ms = 300, seed = 31 }
  before_each(t.setup)
  after_each(t.teardown)

  local function churn(label, args)
    local srv, procs = t.srv, t.procs
    srv:load(S.cluster(4, 8))
    local p = S.start(srv, args)
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    local function interned()
      local st, body = p:http("/metrics")
      assert.are.equal(200, st)
      return metric(body, "draengine_interned_strings"), body
    end
    -- the count once serve has seen the deletions: unchanged over three reads
    local function settled()
      local last, same = nil, 0
      assert.is_truthy(K.wait_for(function()
        local v = interned()
        if v == last then same = same + 1 else same, last = 0, v end
        return same >= 3
      end, 30 * SLOW, 0.3), "the interned count never settled")
      return last
    end
    local counts = {}
    for r = 1, ROUNDS do
      local prefix = string.format("%s-r%d-", label, r)
      local pods, claims = S.workload(PER_ROUND, prefix .. "p")
      for i = 1, 4 do
        pods[#pods + 1] = K.pod("default", prefix .. "orphan-" .. i,
          { claims = { { name = "gpu", resourceClaimName = prefix .. "never-" .. i } } })
      end
      srv:load(pods)
      srv:load(claims) -- after their pods: those wait for them first
      local want = PER_ROUND
      local done = K.wait_for(function() return pods_bound(srv, prefix .. "p") == want end, 60 * SLOW, 0.2)
      assert.is_true(done, "round " .. r .. ": bound " .. pods_bound(srv, prefix .. "p") .. " of " .. want ..
        "\n" .. p:stderr():sub(-3000))
      -- the orphans wait (gated) without ever being bound
      assert.are.equal(0, pods_bound(srv, prefix .. "orphan"))
      local bad = S.check(srv)
      -- the orphans are not bound and their claims are lost: those are the only complaints
      local other = {}
      for _, b in ipairs(bad) do
        if not b:find("orphan", 1, true) then other[#other + 1] = b end
      end
      assert.are.same({}, other)
      delete_all(srv)
      counts[r] = settled()
    end
    local _, body = interned()
    -- nothing of the deleted objects is left queued or assumed
    assert.truthy(body:find('draengine_scheduler_pending_pods{queue="unschedulable"} 0', 1, true), body)
    assert.truthy(body:find("draengine_scheduler_assumed_pods 0", 1, true), body)
    print(string.format("\n  %s: interned strings after each round of %d pods: %s", label, PER_ROUND + 4,
      table.concat(counts, ", ")))
    -- the first round interns what every later one reuses (node names,
    -- phases, reasons); after it the count is flat: each round of 40 pods
    -- and 36 claims with fresh names would otherwise leave at least 76
    for r = 3, ROUNDS do assert.are.equal(counts[2], counts[r], "round " .. r .. ": " .. table.concat(counts, ", ")) end
    assert.is_true(counts[2] <= counts[1] + 4, table.concat(counts, ", "))
    local rc = p:stop()
    assert.are.equal(0, rc)
  end

  it("keeps the interned strings flat, binding on the scheduler's thread", function()
    churn("s", { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000", "--watch-backoff=50ms",
      "--pod-initial-backoff=100ms", "--pod-max-backoff=1s", "--parallel-binds=1" })
  end)

  it("keeps the interned strings flat with binding workers and the claim index", function()
    churn("a", { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000", "--watch-backoff=50ms",
      "--pod-initial-backoff=100ms", "--pod-max-backoff=1s", "--parallel-binds=8",
      "--feature-gates=SchedulerPreQueueingHints=true" })
  end)
end)
