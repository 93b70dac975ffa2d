-- kube_lease_spec.lua - leader election through a coordination.k8s.io/v1
-- Lease: one leader at a time, takeover after expiry, release on shutdown,
-- and losing leadership when renewals fail past the renew deadline.
local K = require "support.kubeapi"

local LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sched"

local function tick_for(leases, secs)
  local deadline = os.time() + secs
  local states
  repeat
    states = {}
    for i, l in ipairs(leases) do
      local leader, lost = l:tick()
      states[i] = { leader = leader, lost = lost }
    end
    K.sleep(0.05)
  until os.time() >= deadline
  return states
end

describe("kube leader election", function()
  local srv
  before_each(function() srv = K.start{} end)
  after_each(function() srv:stop() end)

  local function candidate(id)
    local cl = srv:client()
    return cl:lease{ namespace = "kube-system", name = "sched", identity = id,
      lease_ms = 1500, renew_ms = 1000, retry_ms = 100 }
  end

  it("elects exactly one leader and records it in the Lease", function()
    local a, b = candidate("a"), candidate("b")
    local leaders = 0
    for _ = 1, 20 do
      local la = a:tick()
      local lb = b:tick()
      assert.is_false(la and lb, "two leaders at once")
      if la or lb then leaders = leaders + 1 end
      K.sleep(0.05)
    end
    assert.is_true(leaders > 0)
    local lease = srv:get(LEASE)
    assert.are.equal("a", lease.spec.holderIdentity)
    assert.are.equal(1, lease.spec.leaseDurationSeconds)
    assert.truthy(lease.spec.renewTime:match("%.%d%d%d%d%d%dZ$"))
    assert.are.equal("a", b:holder())
  end)

  it("hands over at once when the leader releases on shutdown", function()
    local a, b = candidate("a"), candidate("b")
    assert.is_true((a:tick()))
    assert.is_false((b:tick()))
    a:release()
    local lease = srv:get(LEASE)
    assert.are.equal("", lease.spec.holderIdentity or "")
    K.sleep(0.15)
    assert.is_true((b:tick()))
    lease = srv:get(LEASE)
    assert.are.equal("b", lease.spec.holderIdentity)
    assert.are.equal(1, lease.spec.leaseTransitions)
  end)

  it("takes over an expired lease, measured on its own clock", function()
    local a, b = candidate("a"), candidate("b")
    assert.is_true((a:tick()))
    -- a stops renewing (crashed); b must wait a full lease duration from
    -- when it first saw the record, then take over
    local st = tick_for({ b }, 1)
    assert.is_false(st[1].leader)
    st = tick_for({ b }, 2)
    assert.is_true(st[1].leader)
    assert.are.equal("b", srv:get(LEASE).spec.holderIdentity)
  end)

  it("reports lost leadership when renewals fail past the renew deadline", function()
    local a = candidate("a")
    assert.is_true((a:tick()))
    srv:faults{ rules = { { method = "PUT", path = "leases", status = 500, count = 1000 },
      { method = "GET", path = "leases", status = 500, count = 1000 } } }
    local lost = false
    local deadline = os.time() + 4
    while os.time() < deadline and not lost do
      local _, l = a:tick()
      lost = l
      K.sleep(0.05)
    end
    assert.is_true(lost)
    assert.is_false((a:tick()))
  end)
end)
