-- sched_prepare_spec.lua - `draengine serve` builds node tables while its
-- queue is empty (al_prepare), so decisions find them ready: the count on
-- /metrics (draengine_node_tables_built_total) follows slices, not pods.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local metric, pods_bound = S.metric, S.pods_bound

describe("draengine serve while idle", function()
  local t = S.fixture{ bookmark_ms = 300, seed = 7 }
  before_each(t.setup)
  after_each(t.teardown)

  it("builds the node tables before any pod needs them, and pods build none", function()
    local srv, procs = t.srv, t.procs
    srv:load(S.cluster(5, 4))
    local p = S.start(srv, { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--watch-backoff=50ms", "--parallel-binds=1" })
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    local function tables()
      local st, body = p:http("/metrics")
      assert.are.equal(200, st)
      return metric(body, "draengine_node_tables_built_total"), metric(body, "draengine_candidate_sets_built_total")
    end
    assert.is_truthy(K.wait_for(function() return tables() == 5 end, 20 * SLOW, 0.1),
      "node tables built while idle: " .. tostring(tables()))
    local _, sets = tables()
    assert.are.equal(5, sets) -- the one class on every node
    -- a node that joins later gets its table before the pods come (built
    -- twice when its Node and its slice arrive in different polls)
    srv:load({ K.node("node-006", { ["kubernetes.io/hostname"] = "node-006" }), K.slice("node-006", "gpu.example.com", 4) })
    local last, same = nil, 0
    assert.is_truthy(K.wait_for(function()
      local v = tables()
      if v == last then same = same + 1 else same, last = 0, v end
      return v >= 6 and same >= 3
    end, 20 * SLOW, 0.2), "after a new node: " .. tostring(tables()))
    local base, base_sets = tables()
    assert.is_true(base <= 7, "tables built for one new node: " .. base - 5)
    local pods, claims = S.workload(18, "w")
    srv:load(claims)
    srv:load(pods)
    assert.is_truthy(K.wait_for(function() return pods_bound(srv) == 18 end, 60 * SLOW, 0.2),
      "bound " .. pods_bound(srv) .. " of 18\n" .. p:stderr():sub(-3000))
    assert.are.same({}, S.check(srv))
    local built, sets2 = tables()
    assert.are.equal(base, built)
    assert.are.equal(base_sets, sets2)
    assert.are.equal(0, p:stop())
  end)
end)
