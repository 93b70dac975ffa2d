-- shadow_spec.lua - `draengine serve --shadow` beside another scheduler,
-- played here by the spec itself against the test API server: it writes
-- claim allocations and bindings the way kube-scheduler does (claim status,
-- then pods/binding), and the shadow says what draengine would have done on
-- the same state - same, same node, other node, infeasible - in its metrics
-- and its decision log, writing nothing to the cluster.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local core = require "draengine.core"

local SLOW = H.asan and 3 or 1
local OTHER = "other"

-- The other scheduler: allocate `devices` of node for the claim, then bind.
local function allocate(srv, claim, node, devices, pod)
  local path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/" .. claim
  local c = srv:get(path)
  local results = {}
  for _, d in ipairs(devices) do
    results[#results + 1] = { request = "gpu", driver = "gpu.example.com", pool = node, device = d }
  end
  c.status = { allocation = { devices = { results = results },
    nodeSelector = { nodeSelectorTerms = { { matchFields = { { key = "metadata.name", operator = "In",
      values = { node } } } } } } },
    reservedFor = { { resource = "pods", name = pod.metadata.name, uid = pod.metadata.uid } } }
  local st, _, err = srv:request("PUT", path .. "/status", c)
  assert(st == 200, "claim status: " .. tostring(st) .. " " .. tostring(err))
end

local function bind(srv, name, node)
  local st, _, err = srv:request("POST", "/api/v1/namespaces/default/pods/" .. name .. "/binding",
    { apiVersion = "v1", kind = "Binding", metadata = { name = name },
      target = { apiVersion = "v1", kind = "Node", name = node } })
  assert(st == 201 or st == 200, "bind " .. name .. ": " .. tostring(st) .. " " .. tostring(err))
end

local function pod_of(srv, name) return srv:get("/api/v1/namespaces/default/pods/" .. name) end

local log_lines = H.json_lines

describe("draengine serve --shadow", function()
  local srv, procs, dir
  before_each(function()
    srv = K.start{ seed = 21 }
    procs = {}
    dir = P.dir({ ["tier.lua"] = P.policy("tier", { "tier.example.com" }, '    return { ["tier.example.com/t"] = "x" }') })
  end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    P.rm(dir)
    assert.are.same({}, reports)
  end)

  it("compares every binding of the other scheduler, writes nothing, and logs both decisions", function()
    srv:load(S.cluster(2, 4))
    local claims, pods = {}, {}
    for i = 1, 4 do
      claims[#claims + 1] = K.claim("default", "c" .. i, "gpu", i == 4 and 5 or 1)
      pods[#pods + 1] = K.pod("default", "p" .. i, { scheduler = OTHER,
        claims = { { name = "gpu", resourceClaimName = "c" .. i } } })
    end
    srv:load(claims)
    srv:load(pods)
    -- a pod draengine itself would schedule is none of the shadow's business
    srv:load{ K.claim("default", "mine", "gpu", 1),
      K.pod("default", "mine", { claims = { { name = "gpu", resourceClaimName = "mine" } } }) }
    local log = dir .. "/decisions.jsonl"
    local p = S.start(srv, { "--shadow", "--shadow-scheduler", OTHER, "--shadow-log", log, "--policy-dir", dir })
    procs[#procs + 1] = p
    K.wait_for(function() return p:stderr():find("informers synced", 1, true) end, 20 * SLOW, 0.1)
    local function decided(n)
      assert(K.wait_for(function() return #log_lines(log) >= n end, 20 * SLOW, 0.1), "decision " .. n .. ":\n" ..
        p:stderr())
    end
    -- p1: what draengine would do (least allocated, ties by name: node-001; first fit: gpu-0)
    local p1 = pod_of(srv, "p1")
    allocate(srv, "c1", "node-001", { "gpu-0" }, p1)
    bind(srv, "p1", "node-001")
    decided(1)
    -- p2: the other scheduler spreads it to node-002; draengine's scores tie and it keeps
    -- to node name order: node-001
    allocate(srv, "c2", "node-002", { "gpu-0" }, pod_of(srv, "p2"))
    bind(srv, "p2", "node-002")
    decided(2)
    -- p3: bound first, its claim written after (the waiting path): node-001, but not gpu-1
    local p3 = pod_of(srv, "p3")
    bind(srv, "p3", "node-001")
    K.sleep(0.5)
    allocate(srv, "c3", "node-001", { "gpu-3" }, p3)
    decided(3)
    -- p4: five GPUs on a node of four - the other scheduler wrote it anyway
    allocate(srv, "c4", "node-002", { "gpu-0", "gpu-1", "gpu-2" }, pod_of(srv, "p4"))
    bind(srv, "p4", "node-002")
    decided(4)

    local lines = log_lines(log)
    local by = {}
    for _, l in ipairs(lines) do by[l.name] = l end
    local _, list = H.run({ "policy", "list", dir })
    local rev = list:match("revision (%x+)")
    for _, l in ipairs(lines) do
      assert.are.equal("default/" .. l.name, l.pod)
      assert.are.equal(OTHER, l.scheduler)
      assert.are.equal(rev, l.policyRevision)
    end
    assert.are.equal("same", by.p1.outcome, core.json_encode(by.p1))
    assert.are.same({ node = "node-001", devices = { "gpu.example.com/node-001/gpu-0" } }, by.p1.theirs)
    assert.are.equal("node-001", by.p1.ours.node)
    assert.are.same({ "gpu.example.com/node-001/gpu-0" }, by.p1.ours.devices)
    assert.are.equal("other_node", by.p2.outcome, core.json_encode(by.p2))
    assert.are.equal("node-001", by.p2.ours.node)
    assert.are.same({ "gpu.example.com/node-001/gpu-1" }, by.p2.ours.devices)
    assert.truthy(by.p2.reason:find("draengine prefers node node-001", 1, true), by.p2.reason)
    assert.are.equal("same_node", by.p3.outcome, core.json_encode(by.p3))
    assert.are.same({ "gpu.example.com/node-001/gpu-3" }, by.p3.theirs.devices)
    assert.are.same({ "gpu.example.com/node-001/gpu-1" }, by.p3.ours.devices)
    assert.are.equal("infeasible", by.p4.outcome, core.json_encode(by.p4))
    assert.truthy(by.p4.ours.unschedulable:find("0/2 nodes are available", 1, true), by.p4.ours.unschedulable)
    assert.is_nil(by.mine)

    local _, m = p:http("/metrics")
    local function metric(o)
      return tonumber(m:match('draengine_shadow_decisions_total{outcome="' .. o .. '"} (%d+)'))
    end
    assert.are.same({ 1, 1, 1, 1, 0, 0 },
      { metric("same"), metric("same_node"), metric("other_node"), metric("infeasible"), metric("error"),
        metric("unobserved") })
    assert.are.equal(0.25, tonumber(m:match("draengine_shadow_agreement_ratio ([%d%.]+)")))
    assert.are.equal(0, tonumber(m:match("draengine_shadow_waiting (%d+)")))

    -- the shadow wrote nothing: no claim status, no binding, no Event, no Lease
    assert.are.same({}, srv:writes())
    assert.is_nil(pod_of(srv, "mine").spec.nodeName)
    -- and its graph kept the other scheduler's allocations: the cluster as it is
    local state = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1")
    assert.are.equal("gpu-0", state.status.allocation.devices.results[1].device)
  end)

  it("goes on deciding from the state the other scheduler made, pod after pod", function()
    srv:load(S.cluster(1, 4))
    local objs = {}
    for i = 1, 4 do
      objs[#objs + 1] = K.claim("default", "c" .. i, "gpu", 1)
      objs[#objs + 1] = K.pod("default", "p" .. i, { scheduler = OTHER,
        claims = { { name = "gpu", resourceClaimName = "c" .. i } } })
    end
    srv:load(objs)
    local log = dir .. "/d.jsonl"
    local p = S.start(srv, { "--shadow", "--shadow-log", log })
    procs[#procs + 1] = p
    K.wait_for(function() return p:stderr():find("informers synced", 1, true) end, 20 * SLOW, 0.1)
    -- the other scheduler takes the devices from the end; draengine would start at gpu-0,
    -- then gpu-1 while gpu-3 is taken, ...: the same node each time, other devices
    for i = 1, 4 do
      allocate(srv, "c" .. i, "node-001", { "gpu-" .. (4 - i) }, pod_of(srv, "p" .. i))
      bind(srv, "p" .. i, "node-001")
      assert(K.wait_for(function() return #log_lines(log) >= i end, 20 * SLOW, 0.1), p:stderr())
    end
    -- each decision saw the devices the other scheduler holds: gpu-3, then gpu-2 ... were
    -- taken, so draengine's first fit is gpu-0 every time, which is theirs only at the end
    local lines = log_lines(log)
    local outcomes = {}
    for i, l in ipairs(lines) do
      assert.are.equal("p" .. i, l.name)
      assert.are.equal("node-001", l.ours.node)
      assert.are.same({ "gpu.example.com/node-001/gpu-0" }, l.ours.devices)
      assert.are.same({ "gpu.example.com/node-001/gpu-" .. (4 - i) }, l.theirs.devices)
      outcomes[i] = l.outcome
    end
    assert.are.same({ "same_node", "same_node", "same_node", "same" }, outcomes)
  end)

  it("refuses a shadow log it cannot write", function()
    local p = S.start(srv, { "--shadow", "--shadow-log", "/nonexistent/dir/log.jsonl" })
    procs[#procs + 1] = p
    assert.are.equal(2, p:wait(10))
    assert.truthy(p:stderr():find("--shadow-log /nonexistent/dir/log.jsonl", 1, true))
  end)
end)
