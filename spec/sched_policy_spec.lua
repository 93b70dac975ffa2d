-- sched_policy_spec.lua - `draengine serve --policy-dir`: policy score hooks
-- steer node choice, a changed policy is hot-reloaded between cycles, and a
-- broken one is refused while the last good revision stays active.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local function prefer(node)
  return ([[
return {
  name = "prefer", version = "1.0.0", api = 1, domains = {}, weight = 1,
  description = "prefer one node",
  score = function(node, placement)
    if node.name == "%s" then return 1000 end
    return 0
  end,
}
]]):format(node)
end

local function write(path, text)
  local f = assert(io.open(path .. ".tmp", "w")); f:write(text); f:close()
  os.rename(path .. ".tmp", path)
end

describe("draengine serve with policies", function()
  local srv, procs, dir
  before_each(function()
    srv = K.start{ seed = 4 }
    procs = {}
    dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
  end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    os.execute("rm -rf " .. dir)
    assert.are.same({}, reports)
  end)

  local function node_of(name)
    local p = srv:get("/api/v1/namespaces/default/pods/" .. name)
    return p.spec.nodeName
  end

  it("scores nodes with the policy and reloads it between cycles", function()
    write(dir .. "/prefer.lua", prefer("node-002"))
    srv:load(S.cluster(3, 8))
    srv:load{ K.claim("default", "c1", "gpu", 1), K.claim("default", "c2", "gpu", 1), K.claim("default", "c3", "gpu", 1) }
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", dir, "--policy-rescan=200ms" })
    procs[#procs + 1] = p
    srv:load{ K.pod("default", "one", { claims = { { name = "gpu", resourceClaimName = "c1" } } }) }
    K.wait_for(function() return node_of("one") end, 10 * SLOW, 0.1)
    assert.are.equal("node-002", node_of("one"))
    local function metric(pat)
      local _, m = p:http("/metrics")
      return tonumber(m:match(pat))
    end
    local ok0 = metric('draengine_policy_reloads_total{result="ok"} (%d+)') or 0
    -- hot reload: the next pod follows the new preference
    write(dir .. "/prefer.lua", prefer("node-003"))
    K.wait_for(function() return (metric('draengine_policy_reloads_total{result="ok"} (%d+)') or 0) > ok0 end, 10 * SLOW, 0.1)
    srv:load{ K.pod("default", "two", { claims = { { name = "gpu", resourceClaimName = "c2" } } }) }
    K.wait_for(function() return node_of("two") end, 10 * SLOW, 0.1)
    assert.are.equal("node-003", node_of("two"))
    -- a broken policy is refused; the last good revision keeps deciding
    write(dir .. "/prefer.lua", "return {")
    K.wait_for(function() return (metric('draengine_policy_reloads_total{result="failed"} (%d+)') or 0) >= 1 end, 10 * SLOW, 0.1)
    assert.is_true(metric('draengine_policy_reloads_total{result="failed"} (%d+)') >= 1)
    local st, body = p:http("/readyz?verbose")
    assert.are.equal(200, st)
    assert.truthy(body:find("[+]policies-loaded ok", 1, true))
    srv:load{ K.pod("default", "three", { claims = { { name = "gpu", resourceClaimName = "c3" } } }) }
    K.wait_for(function() return node_of("three") end, 10 * SLOW, 0.1)
    assert.are.equal("node-003", node_of("three"))
    assert.truthy(p:stderr():find("policy reload refused", 1, true))
  end)

  it("refuses to start when the first revision does not load", function()
    write(dir .. "/bad.lua", "return 42")
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", dir })
    procs[#procs + 1] = p
    assert.are.equal(2, p:wait(10))
    assert.truthy(p:stderr():find("--policy-dir:", 1, true))
  end)
end)
