-- taints_e2e.lua - device taints on a real control plane: slice taints and
-- DeviceTaintRules keep pods off NoSchedule/NoExecute devices unless a
-- request tolerates them; the real device-taint-eviction controller evicts a
-- pod whose device gains a NoExecute taint, and its device serves the next pod.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-taints"
local DRIVER = "gpu.e2e.example.com"

local function template(name, tolerations)
  local t = K.template(NS, name, "e2e-gpu", 1)
  t.spec.spec.devices.requests[1].exactly.tolerations = tolerations
  return t
end

local function rule(name, device, effect)
  return { apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = name },
    spec = { deviceSelector = { driver = DRIVER, pool = "taints-n1", device = device },
      taint = { key = "e2e.example.com/broken", value = "yes", effect = effect } } }
end

local function failed_event(pod)
  return E.wait(function()
    for _, e in ipairs(E.events(NS, pod)) do if e.reason == "FailedScheduling" then return e end end
  end, 60, "FailedScheduling for " .. pod)
end

describe("serve on a real control plane: device taints", function()
  local mark
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    E.node("taints-n1")
    E.create(K.class("e2e-gpu", DRIVER))
  end)
  after_each(function() E.reset() end)

  local function assert_clean(p)
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end

  it("places nothing on NoSchedule or NoExecute devices unless a request tolerates the taint", function()
    local s = K.slice("taints-n1", DRIVER, 3)
    s.spec.devices[1].taints = { { key = "e2e.example.com/xid", value = "79", effect = "NoSchedule" } }
    E.create(s)
    E.create(rule("taints-gpu-2", "gpu-2", "NoExecute"))
    E.create(template("one-gpu"))
    E.create(template("tolerant", { { key = "e2e.example.com/xid", operator = "Exists", effect = "NoSchedule" } }))
    local p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    E.create(K.pod(NS, "a", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    E.wait(function() return E.bound(NS, "a") end, 60, "pod a bound")
    assert.are.same({ DRIVER .. "/taints-n1/gpu-1" }, E.devices(E.pod_claim(E.pod(NS, "a"), "gpu")))
    E.create(K.pod(NS, "b", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    failed_event("b")
    E.sleep(1)
    assert.is_nil(E.bound(NS, "b"), "pod b must not get a tainted device")
    E.create(K.pod(NS, "c", { claims = { { name = "gpu", resourceClaimTemplateName = "tolerant" } } }))
    E.wait(function() return E.bound(NS, "c") end, 60, "pod c (tolerates NoSchedule) bound")
    assert.are.same({ DRIVER .. "/taints-n1/gpu-0" }, E.devices(E.pod_claim(E.pod(NS, "c"), "gpu")))
    assert.is_nil(E.bound(NS, "b"))
    assert_clean(p)
  end)

  it("lets the eviction controller evict a pod whose device turns NoExecute; the device then serves the next pod", function()
    E.create(K.slice("taints-n1", DRIVER, 1))
    E.create(template("one-gpu"))
    local p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    E.create(K.pod(NS, "victim", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    local victim = E.wait(function() return E.bound(NS, "victim") end, 60, "victim bound")
    local vclaim = E.pod_claim(victim, "gpu")
    E.create(K.pod(NS, "next", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } }))
    failed_event("next")
    E.create(rule("taints-evict", "gpu-0", "NoExecute"))
    -- The controller deletes the pod (with its grace period); with no kubelet
    -- to confirm the end, the spec does what a kubelet would.
    E.wait(function()
      local v = E.pod(NS, "victim")
      if not v then return true end
      if v.metadata.deletionTimestamp then
        local disrupted = false
        for _, c in ipairs(v.status.conditions or {}) do
          disrupted = disrupted or (c.type == "DisruptionTarget" and c.reason == "DeletionByDeviceTaintManager")
        end
        assert.is_true(disrupted, "the evicted pod carries the DisruptionTarget condition")
        E.delete("Pod", NS, "victim")
      end
    end, 90, "the device-taint-eviction controller to evict the victim")
    -- the taint still keeps the next pod off the device
    E.sleep(2)
    assert.is_nil(E.bound(NS, "next"), "a NoExecute device must not be allocated")
    E.wait(function() return not E.get("ResourceClaim", NS, vclaim.metadata.name) end, 90,
      "the evicted pod's claim to be deleted")
    E.delete("DeviceTaintRule", nil, "taints-evict")
    local nxt = E.wait(function() return E.bound(NS, "next") end, 60, "next pod bound once the taint is gone")
    assert.are.same({ DRIVER .. "/taints-n1/gpu-0" }, E.devices(E.pod_claim(nxt, "gpu")))
    assert_clean(p)
  end)
end)
