-- alloc_nodeops_spec.lua - optional node operations (KEP-5945, gate
-- DRAOptionalNodeOperations, alpha) and node declared features (KEP-5328,
-- gate NodeDeclaredFeatures, GA): devices of a slice that skips node
-- operations may only go to a node whose status.declaredFeatures declares
-- DRAOptionalNodeOperations, in `allocate` and in `serve`; a claim already
-- allocated with such devices is not available on other nodes.
local core = require "draengine.core"
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"

local SLOW = H.asan and 3 or 1
local FEATURE = "DRAOptionalNodeOperations"

local function list(objs)
  return core.json_encode({ apiVersion = "v1", kind = "List", items = objs })
end

-- Two nodes (the one without the feature sorts first) and a pool of
-- network-attached devices every node sees, whose driver prepares nothing
-- on the node.
local function cluster()
  local plain = K.node("a-plain")
  local declares = K.node("b-declares")
  declares.status.declaredFeatures = { FEATURE }
  local slice = K.slice("a-plain", "fabric.example.com", 2, "port")
  slice.metadata.name = "fabric"
  slice.spec.nodeName = nil
  slice.spec.allNodes = true
  slice.spec.pool.name = "fabric"
  slice.spec.skipNodeOperations = { "*" }
  return { plain, declares, slice, K.class("port", "fabric.example.com"),
    K.template("default", "one-port", "port", 1) }
end

local function pod(name, extra)
  local p = K.pod("default", name, { claims = { { name = "port", resourceClaimTemplateName = "one-port" } } })
  for k, v in pairs(extra or {}) do p.spec[k] = v end
  return p
end

local function schedule(objs, gates)
  local g = {}
  for k, v in pairs(gates or {}) do g[#g + 1] = k .. "=" .. tostring(v) end
  table.sort(g)
  return core.schedule{ text = list(objs), gates = table.concat(g, ",") }
end

describe("optional node operations in allocate", function()
  it("gate off: devices that skip node operations are not allocated anywhere", function()
    local objs = cluster()
    objs[#objs + 1] = pod("p")
    local r = schedule(objs)
    assert.are.equal("unschedulable", r.pods[1].status)
    assert.matches("skip node operations (DRAOptionalNodeOperations is off)", r.pods[1].reason, 1, true)
    assert.matches("2 cannot allocate all claims", r.pods[1].k8s_reason, 1, true)
  end)

  it("gate on: only a node that declares the feature gets them, and the result says what is skipped", function()
    local objs = cluster()
    objs[#objs + 1] = pod("p")
    local r = schedule(objs, { DRAOptionalNodeOperations = true })
    assert.are.equal("scheduled", r.pods[1].status, r.pods[1].reason)
    assert.are.equal("b-declares", r.pods[1].node)
    local res = r.pods[1].claims[1].allocation.devices.results[1]
    assert.are.same({ "*" }, res.skipNodeOperations)
  end)

  it("a node whose declaration is not read (NodeDeclaredFeatures off, allocate only) declares nothing", function()
    local objs = cluster()
    objs[#objs + 1] = pod("p")
    local r = schedule(objs, { DRAOptionalNodeOperations = true, NodeDeclaredFeatures = false })
    assert.are.equal("unschedulable", r.pods[1].status)
    assert.matches("the node does not declare DRAOptionalNodeOperations", r.pods[1].reason, 1, true)
  end)

  it("a claim allocated with skipped node operations is not available on a node without the feature", function()
    local objs = cluster()
    local claim = K.claim("default", "shared", "port", 1)
    claim.status = { allocation = { devices = { results = { { request = "gpu", driver = "fabric.example.com",
      pool = "fabric", device = "port-0", skipNodeOperations = { "*" } } } } } }
    objs[#objs + 1] = claim
    local function user(name, node)
      return K.pod("default", name, { claims = { { name = "port", resourceClaimName = "shared" } },
        node_selector = { ["kubernetes.io/hostname"] = node } })
    end
    objs[#objs + 1] = user("on-plain", "a-plain")
    objs[#objs + 1] = user("on-declares", "b-declares")
    local r = schedule(objs, { DRAOptionalNodeOperations = true })
    assert.are.equal("unschedulable", r.pods[1].status)
    assert.are.equal("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 resourceclaim "
      .. "not available on the node. preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
      .. "scheduling.", r.pods[1].k8s_reason)
    assert.are.equal("scheduled", r.pods[2].status, r.pods[2].reason)
    assert.are.equal("b-declares", r.pods[2].node)
  end)
end)

describe("optional node operations in serve", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 21 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("binds to the node that declares the feature; without one the pod waits", function()
    srv:load(cluster())
    procs[#procs + 1] = S.start(srv, { "--leader-elect=false", "--feature-gates=DRAOptionalNodeOperations=true" })
    srv:load{ pod("p") }
    local q = K.wait_for(function()
      local x = srv:get("/api/v1/namespaces/default/pods/p")
      return x.spec.nodeName and x
    end, 15 * SLOW, 0.1)
    assert.truthy(q, "pod p was not bound")
    assert.are.equal("b-declares", q.spec.nodeName)
    local claims = srv:get("/apis/resource.k8s.io/v1/resourceclaims").items
    assert.are.same({ "*" }, claims[1].status.allocation.devices.results[1].skipNodeOperations)
    -- the other port is free, but no other node declares the feature
    srv:load{ pod("q", { nodeSelector = { ["kubernetes.io/hostname"] = "a-plain" } }) }
    local ev = K.wait_for(function()
      for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/events").items) do
        if e.reason == "FailedScheduling" and e.regarding.name == "q" and
            (e.note or ""):find("does not declare DRAOptionalNodeOperations", 1, true) then return e end
      end
    end, 15 * SLOW, 0.1)
    assert.truthy(ev)
    assert.matches("does not declare DRAOptionalNodeOperations", ev.note, 1, true)
    assert.is_nil(srv:get("/api/v1/namespaces/default/pods/q").spec.nodeName)
  end)

  it("refuses NodeDeclaredFeatures=false: 1.37 locks it", function()
    local rc, _, err = H.run{ "serve", "--feature-gates", "NodeDeclaredFeatures=false" }
    assert.are.equal(2, rc)
    assert.matches("cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true", err, 1, true)
  end)
end)
