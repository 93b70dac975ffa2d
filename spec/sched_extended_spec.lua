-- sched_extended_spec.lua - extended resources backed by DRA (KEP-5004):
-- a pod asking for `example.com/gpu` gets devices through the DeviceClass
-- that names the resource when its node has no device plugin for it.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

describe("draengine serve with extended resources", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 3 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("creates the special claim, allocates it and publishes the request mappings", function()
    local dp = K.node("dp-node")
    dp.status.allocatable["example.com/gpu"] = "4" -- served by a device plugin
    srv:load{ dp, K.node("dra-node"), K.slice("dra-node", "gpu.example.com", 4),
      K.class("gpu", "gpu.example.com", { extendedResourceName = "example.com/gpu" }) }
    local p = S.start(srv, { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000" })
    procs[#procs + 1] = p
    srv:load{
      K.pod("default", "via-dra", { requests = { cpu = "100m", ["example.com/gpu"] = "2" },
        node_selector = { ["kubernetes.io/hostname"] = "dra-node" } }),
      K.pod("default", "via-plugin", { requests = { cpu = "100m", ["example.com/gpu"] = "1" },
        node_selector = { ["kubernetes.io/hostname"] = "dp-node" } }),
    }
    K.wait_for(function()
      local n = 0
      for _, q in ipairs(srv:get("/api/v1/pods").items) do if q.spec.nodeName then n = n + 1 end end
      return n == 2
    end, 15 * SLOW, 0.1)
    local pods = {}
    for _, q in ipairs(srv:get("/api/v1/pods").items) do pods[q.metadata.name] = q end
    assert.are.equal("dra-node", pods["via-dra"].spec.nodeName)
    assert.are.equal("dp-node", pods["via-plugin"].spec.nodeName)
    local claims = srv:get("/apis/resource.k8s.io/v1/resourceclaims").items
    assert.are.equal(1, #claims, "only the DRA-served pod gets a claim")
    local c = claims[1]
    assert.truthy(c.metadata.name:match("^via%-dra%-extended%-resources%-"))
    assert.are.equal("true", c.metadata.annotations["resource.kubernetes.io/extended-resource-claim"])
    -- exactly the ownerReference kube-scheduler sets (no blockOwnerDeletion)
    assert.are.same({ { apiVersion = "v1", kind = "Pod", name = "via-dra", uid = pods["via-dra"].metadata.uid,
      controller = true } }, c.metadata.ownerReferences)
    assert.are.same({ { name = "container-0-request-1",
      exactly = { deviceClassName = "gpu", allocationMode = "ExactCount", count = 2 } } }, c.spec.devices.requests)
    assert.are.equal(2, #c.status.allocation.devices.results)
    assert.are.equal(pods["via-dra"].metadata.uid, c.status.reservedFor[1].uid)
    local st = pods["via-dra"].status.extendedResourceClaimStatus
    assert.are.equal(c.metadata.name, st.resourceClaimName)
    assert.are.same({ { containerName = "main", resourceName = "example.com/gpu",
      requestName = "container-0-request-1" } }, st.requestMappings)
    local bad = S.check(srv)
    assert.are.same({}, bad)
  end)

  it("uses the extended-resource claim that already exists for the pod", function()
    local function ext_claim(name, owner_uid)
      local c = K.claim("default", name, "gpu", 2)
      c.metadata.annotations = { ["resource.kubernetes.io/extended-resource-claim"] = "true" }
      c.metadata.ownerReferences = { { apiVersion = "v1", kind = "Pod", name = "owner", uid = owner_uid,
        controller = true } }
      return c
    end
    local pod = K.pod("default", "via-dra", { requests = { cpu = "100m", ["example.com/gpu"] = "2" } })
    pod.metadata.uid = "0b7c2c1e-0000-4000-8000-000000000001"
    srv:load{ K.node("dra-node"), K.slice("dra-node", "gpu.example.com", 4),
      K.class("gpu", "gpu.example.com", { extendedResourceName = "example.com/gpu" }),
      ext_claim("someone-elses", "0b7c2c1e-0000-4000-8000-000000000002"),
      ext_claim("via-dra-extended-resources-made", pod.metadata.uid) }
    procs[#procs + 1] = S.start(srv, { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000" })
    srv:load{ pod }
    local bound = K.wait_for(function()
      local q = srv:get("/api/v1/namespaces/default/pods/via-dra")
      return q.spec.nodeName and q
    end, 15 * SLOW, 0.1)
    assert.are.equal("dra-node", bound.spec.nodeName)
    local claims = {}
    for _, c in ipairs(srv:get("/apis/resource.k8s.io/v1/resourceclaims").items) do claims[c.metadata.name] = c end
    assert.are.same({ "someone-elses", "via-dra-extended-resources-made" },
      (function() local t = {} for k in pairs(claims) do t[#t + 1] = k end table.sort(t) return t end)())
    local mine = claims["via-dra-extended-resources-made"]
    assert.are.equal(2, #mine.status.allocation.devices.results)
    assert.are.equal(pod.metadata.uid, mine.status.reservedFor[1].uid)
    assert.is_nil(claims["someone-elses"].status and claims["someone-elses"].status.allocation)
  end)
end)
