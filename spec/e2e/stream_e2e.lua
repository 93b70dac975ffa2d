-- stream_e2e.lua - faults in the middle of a stream of pods, on a real
-- control plane: two serve replicas with Lease election where the leader is
-- killed with SIGKILL, and a kube-apiserver restart. Afterwards every pod is
-- bound, no device is in two claims and no claim is lost.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"

local NS = "e2e-stream"
local DRIVER = "gpu.e2e.example.com"
local NODES, GPUS = 5, 8

local function cluster()
  for i = 1, NODES do
    local n = "stream-n" .. i
    E.node(n)
    E.create(K.slice(n, DRIVER, GPUS))
  end
  E.create(K.class("e2e-gpu", DRIVER))
  E.create(K.template(NS, "one-gpu", "e2e-gpu", 1))
end

-- Pods first..last, every second one with a direct claim, the others from the template.
local function submit(first, last)
  for i = first, last do
    local name = string.format("s-%03d", i)
    local ref
    if i % 2 == 0 then
      E.create(K.claim(NS, name, "e2e-gpu", 1))
      ref = { name = "gpu", resourceClaimName = name }
    else
      ref = { name = "gpu", resourceClaimTemplateName = "one-gpu" }
    end
    E.create(K.pod(NS, name, { claims = { ref } }))
  end
end

local function bound_count()
  local n = 0
  for _, p in ipairs(E.list("Pod", NS)) do if p.spec.nodeName then n = n + 1 end end
  return n
end

local function devices_in_use()
  local n = 0
  for _, c in ipairs(E.list("ResourceClaim", NS)) do n = n + #E.devices(c) end
  return n
end

describe("serve on a real control plane: faults mid-stream", function()
  local mark
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    cluster()
  end)
  after_each(function() E.reset() end)

  local function assert_clean(procs, total)
    E.wait(function() return bound_count() == total end, 120, total .. " pods bound")
    assert.are.same({}, E.check())
    assert.are.equal(total, devices_in_use())
    assert.are.same({}, E.stop_serves())
    assert.are.same({}, E.refused(mark))
    for _, p in ipairs(procs) do assert.are.same({}, E.warnings(p)) end
  end

  it("hands over to the standby replica when the leader is killed with SIGKILL", function()
    local function replica(id)
      return E.serve{ "--leader-elect=true", "--leader-elect-resource-namespace=draengine-system",
        "--leader-elect-resource-name=draengine", "--leader-elect-identity=" .. id,
        "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    end
    local a, b = replica("replica-a"), replica("replica-b")
    local lease = E.wait(function()
      local st, l = E.request("GET", "/apis/coordination.k8s.io/v1/namespaces/draengine-system/leases/draengine")
      return st == 200 and l.spec.holderIdentity and l
    end, 30, "a leader")
    local leader, standby = a, b
    if lease.spec.holderIdentity == "replica-b" then leader, standby = b, a end
    submit(1, 12)
    E.wait(function() return bound_count() >= 4 end, 60, "the leader binding the first pods")
    leader:signal("KILL")
    submit(13, 24)
    E.wait(function()
      local _, l = E.request("GET", "/apis/coordination.k8s.io/v1/namespaces/draengine-system/leases/draengine")
      return l and l.spec.holderIdentity == (standby == a and "replica-a" or "replica-b")
    end, 30, "the standby to take the lease")
    assert_clean({ standby }, 24)
  end)

  it("relists and finishes when kube-apiserver restarts mid-stream", function()
    -- The restart comes while most of the first 30 pods are still being
    -- scheduled, so writes and bindings are in flight when it goes down and
    -- are refused (then 403) while it comes back: a claim whose write failed
    -- must be written again before its pod is bound.
    local p = E.serve{ "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    submit(1, 30)
    E.wait(function() return bound_count() >= 2 end, 60, "the first pods bound")
    assert.are.same({}, E.refused(mark))
    E.restart_apiserver()
    -- While it starts, kube-apiserver answers 403 until its RBAC caches have
    -- synced; what it refuses once it is ready counts again.
    mark = E.audit_mark()
    submit(31, 40)
    E.wait(function() return bound_count() == 40 end, 120, "40 pods bound")
    assert.is_true(p:alive(), "serve survives the restart")
    assert_clean({ p }, 40)
  end)
end)
