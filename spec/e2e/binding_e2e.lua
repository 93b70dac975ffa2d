-- binding_e2e.lua - device binding conditions (KEP-5007) on a real control
-- plane.  The spec plays the DRA driver with the admin's credentials: it
-- reports the device's conditions in the claim's status.devices, which the
-- real API server validates (condition shape, the device being in the
-- allocation).  serve must write the allocation with allocationTimestamp and
-- the device's conditions, hold the pod until "Attached" is True, bind it
-- then; a failure condition unreserves the pod and the claim is allocated
-- again.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-binding"
local DRIVER = "fabric.e2e.example.com"

local function cluster()
  E.node("bind-n1")
  local s = K.slice("bind-n1", DRIVER, 2, "fab")
  for _, d in ipairs(s.spec.devices) do
    d.bindingConditions = { "Attached" }
    d.bindingFailureConditions = { "AttachFailed" }
    d.bindsToNode = true
  end
  E.create(s)
  E.create(K.class("e2e-fab", DRIVER))
  E.create(K.claim(NS, "fab", "e2e-fab", 1))
  E.create(K.pod(NS, "fab-pod", { claims = { { name = "gpu", resourceClaimName = "fab" } } }))
end

-- what a driver writes: one status.devices entry per allocated device with
-- the condition given (metav1.Condition, as the API server validates it)
local function report(ctype, status, reason)
  local now = os.date("!%Y-%m-%dT%H:%M:%SZ")
  return E.modify("ResourceClaim", NS, "fab", function(c)
    local devs = {}
    for _, r in ipairs(c.status.allocation.devices.results) do
      devs[#devs + 1] = { driver = r.driver, pool = r.pool, device = r.device,
        conditions = { { type = ctype, status = status, reason = reason, message = "e2e driver: " .. reason,
          lastTransitionTime = now } } }
    end
    c.status.devices = devs
  end, "status")
end

local function allocated()
  return E.wait(function()
    local c = E.get("ResourceClaim", NS, "fab")
    return c.status and c.status.allocation and c
  end, 60, "claim fab allocated")
end

describe("serve on a real control plane: binding conditions", function()
  local mark, p
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
  end)
  after_each(function() E.reset() end)

  it("holds the pod until the driver reports the condition, then binds it", function()
    cluster()
    p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    local c = allocated()
    local a = c.status.allocation
    assert.truthy(a.allocationTimestamp, "allocationTimestamp is set")
    assert.are.same({ "Attached" }, a.devices.results[1].bindingConditions)
    assert.are.same({ "AttachFailed" }, a.devices.results[1].bindingFailureConditions)
    assert.are.equal(c.status.reservedFor[1].name, "fab-pod")
    -- allocated and reserved, but not bound while the device is not attached
    E.sleep(1.5)
    assert.is_nil(E.bound(NS, "fab-pod"))
    local pod = E.pod(NS, "fab-pod")
    assert.are.equal("bind-n1", pod.status.nominatedNodeName)
    report("Attached", "True", "Attached")
    E.wait(function() return E.bound(NS, "fab-pod") end, 30, "fab-pod bound once Attached")
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end)

  it("unreserves on a failure condition and allocates the claim again", function()
    cluster()
    p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    allocated()
    report("AttachFailed", "True", "FabricRefused")
    -- the pod leaves reservedFor, the claim is deallocated (which clears the
    -- driver's report with it) and allocated anew, reserved for the pod
    local again = E.wait(function()
      local c = E.get("ResourceClaim", NS, "fab")
      local st = c.status or {}
      return st.allocation and (st.devices == nil or #st.devices == 0) and st.reservedFor and c
    end, 60, "claim fab allocated again")
    assert.is_nil(E.bound(NS, "fab-pod"))
    local failed
    for _, e in ipairs(E.events(NS, "fab-pod")) do
      if e.reason == "FailedScheduling" and (e.note or ""):find("device binding failed", 1, true) then failed = e end
    end
    assert.truthy(failed, "a FailedScheduling event names the failure")
    assert.truthy(failed.note:find("reason=FabricRefused", 1, true), failed.note)
    assert.are.equal("fab-pod", again.status.reservedFor[1].name)
    report("Attached", "True", "Attached")
    E.wait(function() return E.bound(NS, "fab-pod") end, 30, "fab-pod bound on the second allocation")
    assert.are.same({}, E.check())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    assert.are.same({}, E.warnings(p))
  end)
end)
