-- sched_binding_spec.lua - device binding conditions (KEP-5007, gate
-- DRADeviceBindingConditions, beta, on): `serve` writes the allocation
-- (with allocationTimestamp) and waits in PreBind, without holding other
-- pods, until the driver reports every binding condition True in the
-- claim's status.devices; a failure condition or the timeout unreserves
-- the pod, the claim is deallocated and allocated again.  `allocate` shows
-- such claims as allocated but awaiting their conditions.  The test API
-- server plays the driver (Server:driver).
local core = require "draengine.core"
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"

local SLOW = H.asan and 3 or 1
local FAB = "fabric.example.com"

-- n1 with two fabric-attached devices that need "Attached" before a pod
-- may run, and plain GPUs
local function cluster()
  local fab = K.slice("n1", FAB, 2, "fab")
  fab.metadata.name = "n1-fabric"
  for _, d in ipairs(fab.spec.devices) do
    d.bindingConditions = { "Attached" }
    d.bindingFailureConditions = { "AttachFailed" }
    d.bindsToNode = true
  end
  return { K.node("n1"), fab, K.slice("n1", "gpu.example.com", 2), K.class("fab", FAB),
    K.class("gpu", "gpu.example.com"), K.template("default", "one-fab", "fab", 1),
    K.template("default", "one-gpu", "gpu", 1) }
end

local function pod(name, template)
  return K.pod("default", name, { claims = { { name = "dev", resourceClaimTemplateName = template } } })
end

local function list(objs)
  return core.json_encode({ apiVersion = "v1", kind = "List", items = objs })
end

-- the pod's events of one reason (whose note contains `note`, if given)
local function events(srv, name, reason, note)
  local out = {}
  for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/events").items) do
    if e.regarding.name == name and (not reason or e.reason == reason) and
        (not note or (e.note or ""):find(note, 1, true)) then
      out[#out + 1] = e
    end
  end
  return out
end

local function claim_of(srv, podname)
  for _, c in ipairs(srv:get("/apis/resource.k8s.io/v1/resourceclaims").items) do
    if c.metadata.ownerReferences and c.metadata.ownerReferences[1].name == podname then return c end
  end
end

local function pod_of(srv, name) return srv:get("/api/v1/namespaces/default/pods/" .. name) end

describe("binding conditions in serve", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 41 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function start(extra)
    local args = { "--leader-elect=false", "--pod-initial-backoff=100ms", "--pod-max-backoff=500ms" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    procs[#procs + 1] = S.start(srv, args)
    return procs[#procs]
  end

  it("waits in PreBind for the driver's conditions and keeps scheduling other pods meanwhile", function()
    srv:load(cluster())
    srv:driver(FAB, "ready", 2500 * SLOW)
    local p = start()
    srv:load{ pod("fab-pod", "one-fab") }
    local c = K.wait_for(function()
      local x = claim_of(srv, "fab-pod")
      return x and x.status and x.status.allocation and x
    end, 15 * SLOW, 0.05)
    assert.truthy(c, p:stderr():sub(-2000))
    -- allocated, stamped and reserved; the pod not bound yet but nominated
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", c.status.allocation.allocationTimestamp)
    assert.are.same({ "Attached" }, c.status.allocation.devices.results[1].bindingConditions)
    assert.are.equal("fab-pod", c.status.reservedFor[1].name)
    local w = K.wait_for(function()
      local x = pod_of(srv, "fab-pod")
      return x.status.nominatedNodeName and x
    end, 5 * SLOW, 0.05)
    assert.truthy(w)
    assert.is_nil(w.spec.nodeName)
    assert.are.equal("n1", w.status.nominatedNodeName)
    assert.truthy(K.wait_for(function() return #events(srv, "fab-pod", "BindingConditionsPending") > 0 end, 5 * SLOW, 0.05))
    -- another pod is scheduled while the first one waits
    srv:load{ pod("gpu-pod", "one-gpu") }
    assert.truthy(K.wait_for(function() return pod_of(srv, "gpu-pod").spec.nodeName end, 5 * SLOW, 0.05))
    assert.is_nil(pod_of(srv, "fab-pod").spec.nodeName, "the waiting pod is bound only once its device is attached")
    -- the driver reports Attached: bound
    local b = K.wait_for(function()
      local x = pod_of(srv, "fab-pod")
      return x.spec.nodeName and x
    end, 15 * SLOW, 0.05)
    assert.truthy(b, p:stderr():sub(-2000))
    assert.are.equal("n1", b.spec.nodeName)
    local d = claim_of(srv, "fab-pod").status.devices[1]
    assert.are.equal("True", d.conditions[1].status)
    assert.are.equal(1, #events(srv, "fab-pod", "Scheduled"))
    -- both Events refer to their pod as kube-scheduler's do: kind, version,
    -- namespace, name and uid (the one bound after its wait, the other by a
    -- binding worker)
    for _, name in ipairs{ "fab-pod", "gpu-pod" } do
      local r = events(srv, name, "Scheduled")[1].regarding
      assert.are.same({ "Pod", "v1", "default", name, pod_of(srv, name).metadata.uid },
        { r.kind, r.apiVersion, r.namespace, r.name, r.uid })
      assert.truthy(r.resourceVersion)
    end
    local _, metrics = p:http("/metrics")
    assert.matches('draengine_scheduler_binding_conditions_total{status="success"} 1', metrics, 1, true)
  end)

  it("a failure condition unreserves the pod; the claim is deallocated and allocated again", function()
    srv:load(cluster())
    srv:driver(FAB, "fail", 0)
    local p = start()
    srv:load{ pod("fab-pod", "one-fab") }
    local ev = K.wait_for(function()
      return events(srv, "fab-pod", "FailedScheduling", "device binding failed")[1]
    end, 15 * SLOW, 0.05)
    assert.truthy(ev, p:stderr():sub(-2000))
    assert.matches('running PreBind plugin "DynamicResources": device binding failed: claim=fab%-pod%-dev%-%w+, '
      .. 'reason=AttachFailed, message="the fabric refused the device"', ev.note)
    -- the pod left reservedFor, then PostFilter deallocated the claim: a
    -- status write that clears allocation and devices
    local dealloc = K.wait_for(function()
      for _, w in ipairs(srv:writes()) do
        if w.resource == "resourceclaims" and w.subresource == "status" and w.method == "PATCH" and w.status == 200 then
          return true
        end
      end
    end, 10 * SLOW, 0.05)
    assert.truthy(dealloc, "no unreserve patch")
    local reallocated = K.wait_for(function()
      local n = 0
      for _, w in ipairs(srv:writes()) do
        if w.resource == "resourceclaims" and w.subresource == "status" and w.method == "PUT" and w.status == 200 then
          n = n + 1
        end
      end
      return n >= 3 -- allocate, deallocate, allocate again
    end, 15 * SLOW, 0.05)
    assert.truthy(reallocated, p:stderr():sub(-3000))
    assert.is_nil(pod_of(srv, "fab-pod").spec.nodeName)
    -- a working driver ends it
    srv:driver(FAB, "ready", 0)
    assert.truthy(K.wait_for(function() return pod_of(srv, "fab-pod").spec.nodeName end, 20 * SLOW, 0.1),
      p:stderr():sub(-3000))
  end)

  it("times out after --dra-binding-timeout, then tries again", function()
    srv:load(cluster())
    srv:driver(FAB, "none")
    local p = start{ "--dra-binding-timeout=1s" }
    srv:load{ pod("fab-pod", "one-fab") }
    local ev = K.wait_for(function()
      return events(srv, "fab-pod", "FailedScheduling", "device binding timeout")[1]
    end, 15 * SLOW, 0.1)
    assert.truthy(ev, p:stderr():sub(-2000))
    assert.matches('running PreBind plugin "DynamicResources": device binding timeout', ev.note, 1, true)
    assert.is_nil(pod_of(srv, "fab-pod").spec.nodeName)
    local _, metrics = p:http("/metrics")
    assert.matches('draengine_scheduler_binding_conditions_total{status="timeout"} [1-9]', metrics)
    srv:driver(FAB, "ready", 0)
    assert.truthy(K.wait_for(function() return pod_of(srv, "fab-pod").spec.nodeName end, 20 * SLOW, 0.1),
      p:stderr():sub(-3000))
  end)

  it("checks --dra-binding-timeout as kube-scheduler checks bindingTimeout", function()
    local rc, _, err = H.run{ "serve", "--dra-binding-timeout=500ms" }
    assert.are.equal(2, rc)
    assert.matches("--dra-binding-timeout", err, 1, true)
    rc, _, err = H.run{ "serve", "--dra-binding-timeout=1m", "--feature-gates=DRADeviceBindingConditions=false" }
    assert.are.equal(2, rc)
    assert.matches("Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
      err, 1, true)
  end)
end)

describe("binding conditions in allocate", function()
  it("shows the claim allocated and the pod awaiting its conditions, nominated but not bound", function()
    local objs = cluster()
    objs[#objs + 1] = pod("fab-pod", "one-fab")
    local f = H.write_temp(list(objs), ".json")
    local rc, out, err = H.run{ "allocate", "-f", f, "-o", "json" }
    assert.are.equal(0, rc, err)
    assert.matches("pod default/fab%-pod: allocated on node n1, awaiting binding conditions %(" .. FAB:gsub("%p", "%%%0")
      .. "/n1/fab%-0:Attached%)", err)
    local pod_out, claim_out
    for _, o in ipairs(core.json_decode(out).items) do
      if o.kind == "Pod" then pod_out = o else claim_out = o end
    end
    assert.is_nil(pod_out.spec.nodeName)
    assert.are.equal("n1", pod_out.status.nominatedNodeName)
    assert.are.same({ "Attached" }, claim_out.status.allocation.devices.results[1].bindingConditions)
    rc, out = H.run{ "allocate", "-f", f, "-o", "table" }
    os.remove(f)
    assert.are.equal(0, rc)
    assert.matches("awaiting=Attached", out, 1, true)
    assert.matches("1 pod(s) scheduled (1 awaiting binding conditions), 0 unschedulable", out, 1, true)
  end)

  it("a claim whose conditions are True is bound; one whose device failed is not available anywhere", function()
    local objs = cluster()
    local function allocated(name, conds)
      local c = K.claim("default", name, "fab", 1)
      c.status = { allocation = { devices = { results = { { request = "gpu", driver = FAB, pool = "n1",
        device = name == "ok" and "fab-0" or "fab-1", bindingConditions = { "Attached" },
        bindingFailureConditions = { "AttachFailed" } } } } },
        devices = { { driver = FAB, pool = "n1", device = name == "ok" and "fab-0" or "fab-1", conditions = conds } } }
      return c
    end
    local t = "2026-01-01T00:00:00Z"
    objs[#objs + 1] = allocated("ok", { { type = "Attached", status = "True", reason = "A", message = "",
      lastTransitionTime = t } })
    objs[#objs + 1] = allocated("broken", { { type = "AttachFailed", status = "True", reason = "B", message = "",
      lastTransitionTime = t } })
    objs[#objs + 1] = K.pod("default", "uses-ok", { claims = { { name = "d", resourceClaimName = "ok" } } })
    objs[#objs + 1] = K.pod("default", "uses-broken", { claims = { { name = "d", resourceClaimName = "broken" } } })
    local r = core.schedule{ text = list(objs) }
    assert.are.equal("scheduled", r.pods[1].status, r.pods[1].reason)
    assert.are.equal("unschedulable", r.pods[2].status)
    assert.matches("1 resourceclaim not available on the node", r.pods[2].k8s_reason, 1, true)
    -- with the gate off, devices with binding conditions are never allocated
    local off = core.schedule{ text = list({ cluster()[1], cluster()[2], cluster()[4], cluster()[6],
      pod("fab-pod", "one-fab") }), gates = "DRADeviceBindingConditions=false" }
    assert.are.equal("unschedulable", off.pods[1].status)
  end)
end)
