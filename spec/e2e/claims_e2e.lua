-- claims_e2e.lua - `draengine serve` against a real kube-apiserver 1.37:
-- claims from ResourceClaimTemplates (made by the real resourceclaim
-- controller) and direct claims; a pod that waits for its claim; freeing a
-- claim by deleting its pod; extended resources backed by a DeviceClass.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-claims"
local DRIVER = "gpu.e2e.example.com"

describe("serve on a real control plane: claims", function()
  local mark
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
  end)
  after_each(function() E.reset() end)

  -- Every spec ends here: nothing the server refused, no warning header, no
  -- sanitizer report, and the cluster's invariants hold.
  local function assert_clean(procs)
    assert.are.same({}, E.check())
    local reports = E.stop_serves()
    assert.are.same({}, reports)
    assert.are.same({}, E.refused(mark))
    for _, p in ipairs(procs) do assert.are.same({}, E.warnings(p)) end
  end

  it("allocates claims from templates and direct claims, and waits for a missing claim", function()
    for i = 1, 2 do
      local n = "claims-node-" .. i
      E.node(n)
      E.create(K.slice(n, DRIVER, 3))
    end
    E.create(K.class("e2e-gpu", DRIVER))
    E.create(K.template(NS, "one-gpu", "e2e-gpu", 1))
    E.create(K.claim(NS, "direct-0", "e2e-gpu", 1))
    E.create(K.claim(NS, "direct-1", "e2e-gpu", 1))
    local p = E.serve{}
    local names = {}
    for i = 0, 1 do
      E.create(K.pod(NS, "tmpl-" .. i, { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
      E.create(K.pod(NS, "direct-" .. i, { claims = { { name = "gpu", resourceClaimName = "direct-" .. i } } }))
      names[#names + 1] = "tmpl-" .. i
      names[#names + 1] = "direct-" .. i
    end
    -- a pod whose claim does not exist yet waits for it, then runs
    E.create(K.pod(NS, "late", { claims = { { name = "gpu", resourceClaimName = "late-claim" } } }))
    for _, n in ipairs(names) do E.wait(function() return E.bound(NS, n) end, 60, "pod " .. n .. " bound") end
    E.sleep(1)
    assert.is_nil(E.bound(NS, "late"))
    E.create(K.claim(NS, "late-claim", "e2e-gpu", 1))
    E.wait(function() return E.bound(NS, "late") end, 60, "pod late bound after its claim appeared")

    local seen = {}
    for _, n in ipairs(names) do
      local pod = E.pod(NS, n)
      local c = assert(E.pod_claim(pod, "gpu"), "claim of " .. n)
      local devs = E.devices(c)
      assert.are.equal(1, #devs)
      assert.is_nil(seen[devs[1]], "device " .. devs[1] .. " given twice")
      seen[devs[1]] = n
      -- the device is on the pod's node (pool = node name in K.slice)
      assert.are.equal(DRIVER .. "/" .. pod.spec.nodeName .. "/", devs[1]:match("^(.*/.*/)"))
      assert.are.equal(pod.metadata.uid, c.status.reservedFor[1].uid)
      local fin = false
      for _, f in ipairs(c.metadata.finalizers or {}) do fin = fin or f == "resource.kubernetes.io/delete-protection" end
      assert.is_true(fin, "claim " .. c.metadata.name .. " lacks the delete-protection finalizer")
      local sel = c.status.allocation.nodeSelector.nodeSelectorTerms[1]
      local vals = (sel.matchFields or sel.matchExpressions)[1].values
      assert.are.same({ pod.spec.nodeName }, vals)
    end
    assert_clean({ p })
  end)

  it("leaves a pod pending with an event while no device is free, and places it once one is freed", function()
    E.node("claims-small")
    E.create(K.slice("claims-small", DRIVER, 2))
    E.create(K.class("e2e-gpu", DRIVER))
    E.create(K.template(NS, "one-gpu", "e2e-gpu", 1))
    local p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    for i = 0, 1 do
      E.create(K.pod(NS, "fill-" .. i, { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    end
    for i = 0, 1 do E.wait(function() return E.bound(NS, "fill-" .. i) end, 60, "fill-" .. i) end
    E.create(K.pod(NS, "waiter", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    local ev = E.wait(function()
      for _, e in ipairs(E.events(NS, "waiter")) do if e.reason == "FailedScheduling" then return e end end
    end, 60, "a FailedScheduling event for the waiting pod")
    assert.are.equal("Warning", ev.type)
    assert.is_nil(E.bound(NS, "waiter"))
    -- deleting a pod frees its template claim (deleted by the controllers)
    local gone = E.pod_claim(E.pod(NS, "fill-0"), "gpu")
    E.delete("Pod", NS, "fill-0")
    E.wait(function() return E.bound(NS, "waiter") end, 90, "the waiting pod placed after a device was freed")
    local c = E.pod_claim(E.pod(NS, "waiter"), "gpu")
    assert.are.same(E.devices(gone), E.devices(c))
    assert_clean({ p })
  end)

  it("serves extended resources through a DeviceClass (KEP-5004)", function()
    E.node("claims-ext")
    E.create(K.slice("claims-ext", DRIVER, 2))
    E.create(K.class("e2e-gpu", DRIVER, { extendedResourceName = "example.com/gpu" }))
    local p = E.serve{}
    E.create(E.limits(K.pod(NS, "ext-2", { requests = { cpu = "100m", ["example.com/gpu"] = "2" } })))
    local pod = E.wait(function() return E.bound(NS, "ext-2") end, 60, "pod with example.com/gpu: 2 bound")
    local st = pod.status.extendedResourceClaimStatus
    assert.is_table(st, "pod.status.extendedResourceClaimStatus is set")
    local c = E.get("ResourceClaim", NS, st.resourceClaimName)
    assert.are.equal(2, #E.devices(c))
    assert.are.equal("true", c.metadata.annotations["resource.kubernetes.io/extended-resource-claim"])
    assert.are.equal(pod.metadata.uid, c.metadata.ownerReferences[1].uid)
    -- a third GPU does not exist: the next pod stays pending
    E.create(E.limits(K.pod(NS, "ext-1", { requests = { cpu = "100m", ["example.com/gpu"] = "1" } })))
    E.wait(function()
      for _, e in ipairs(E.events(NS, "ext-1")) do if e.reason == "FailedScheduling" then return e end end
    end, 60, "FailedScheduling for a pod asking more example.com/gpu than is free")
    assert.is_nil(E.bound(NS, "ext-1"))
    assert_clean({ p })
  end)
end)
