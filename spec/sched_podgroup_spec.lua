-- sched_podgroup_spec.lua - workload / PodGroup claims (KEP-5729, gate
-- DRAWorkloadResourceClaims): one claim allocated once and reserved for the
-- PodGroup, shared by more pods than the 256-entry reservedFor limit.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local function podgroup(name, uid, claims, statuses)
  return { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup",
    metadata = { name = name, namespace = "default", uid = uid },
    spec = { resourceClaims = claims }, status = { resourceClaimStatuses = statuses } }
end

local function grouped_pod(name, group, refs)
  local p = K.pod("default", name, { claims = refs, requests = { cpu = "100m" } })
  p.spec.schedulingGroup = { podGroupName = group }
  return p
end

describe("draengine serve with PodGroup claims", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 9 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("reserves a shared claim once for 300 pods of a PodGroup", function()
    local objs = S.cluster(3, 8)
    for _, o in ipairs(objs) do
      if o.kind == "Node" then o.status.allocatable.pods = "1000" end
    end
    objs[#objs + 1] = K.claim("default", "shared-gpus", "gpu", 4)
    objs[#objs + 1] = podgroup("train", "11111111-2222-4333-8444-555555555555",
      { { name = "shared", resourceClaimName = "shared-gpus" } })
    -- a template-backed group claim, already created by the claim controller
    local tc = K.claim("default", "infer-gpu-abcde", "gpu", 1)
    tc.metadata.ownerReferences = { { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup",
      name = "infer", uid = "99999999-2222-4333-8444-555555555555", controller = true } }
    objs[#objs + 1] = tc
    objs[#objs + 1] = podgroup("infer", "99999999-2222-4333-8444-555555555555",
      { { name = "gpu", resourceClaimTemplateName = "one-gpu" } },
      { { name = "gpu", resourceClaimName = "infer-gpu-abcde" } })
    srv:load(objs)
    local p = S.start(srv, { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--feature-gates=DRAWorkloadResourceClaims=true,GenericWorkload=true" })
    procs[#procs + 1] = p
    local pods = {}
    for i = 1, 300 do
      pods[#pods + 1] = grouped_pod(string.format("train-%03d", i), "train",
        { { name = "shared", resourceClaimName = "shared-gpus" } })
    end
    for i = 1, 20 do
      pods[#pods + 1] = grouped_pod(string.format("infer-%02d", i), "infer",
        { { name = "gpu", resourceClaimTemplateName = "one-gpu" } })
    end
    srv:load(pods)
    local done = K.wait_for(function()
      local n = 0
      for _, q in ipairs(srv:get("/api/v1/pods").items) do if q.spec.nodeName then n = n + 1 end end
      return n == 320
    end, 60 * SLOW, 0.3)
    assert.is_true(done, p:stderr():sub(-2000))
    local claims = {}
    for _, c in ipairs(srv:get("/apis/resource.k8s.io/v1/resourceclaims").items) do claims[c.metadata.name] = c end
    for _, name in ipairs({ "shared-gpus", "infer-gpu-abcde" }) do
      local rf = claims[name].status.reservedFor
      assert.are.equal(1, #rf, name)
      assert.are.equal("scheduling.k8s.io", rf[1].apiGroup)
      assert.are.equal("podgroups", rf[1].resource)
    end
    assert.are.equal("train", claims["shared-gpus"].status.reservedFor[1].name)
    assert.are.equal(4, #claims["shared-gpus"].status.allocation.devices.results)
    -- every pod of a group runs where its group's devices are
    local nodes = { train = {}, infer = {} }
    for _, q in ipairs(srv:get("/api/v1/pods").items) do
      nodes[q.spec.schedulingGroup.podGroupName][q.spec.nodeName] = true
    end
    local function count(t) local n = 0; for _ in pairs(t) do n = n + 1 end; return n end
    assert.are.equal(1, count(nodes.train))
    assert.are.equal(1, count(nodes.infer))
    -- only two claim status writes happened: one per group
    local status_writes = 0
    for _, w in ipairs(srv:writes()) do
      if w.resource == "resourceclaims" and w.subresource == "status" and w.status == 200 then
        status_writes = status_writes + 1
      end
    end
    assert.are.equal(2, status_writes)
  end)

  it("waits for a PodGroup that does not exist yet", function()
    srv:load(S.cluster(1, 2))
    local p = S.start(srv, { "--leader-elect=false", "--feature-gates=GenericWorkload=true,DRAWorkloadResourceClaims=true" })
    procs[#procs + 1] = p
    srv:load{ grouped_pod("early", "later", nil) }
    K.sleep(0.5)
    assert.is_nil(srv:get("/api/v1/namespaces/default/pods/early").spec.nodeName)
    srv:load{ podgroup("later", "abcdefab-2222-4333-8444-555555555555", {}) }
    K.wait_for(function() return srv:get("/api/v1/namespaces/default/pods/early").spec.nodeName end, 10 * SLOW, 0.1)
    assert.truthy(srv:get("/api/v1/namespaces/default/pods/early").spec.nodeName)
  end)
end)
