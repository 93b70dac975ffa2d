-- sched_leader_spec.lua - `draengine serve --parallel-binds` that loses its
-- Lease mid-stream: the test API server refuses every Lease renewal while
-- writes of many pods are queued behind slow answers.  From the renew
-- deadline of the last renewal that went through, the replica sends no
-- write (claim updates, pods/binding, Events): binding workers check the
-- deadline before every request, not only when the scheduling loop notices
-- the loss (it may be held up in a renewal that is retried for seconds).
-- It then exits 1, and no pod is left bound without its claims written.
-- Another replica takes the Lease over and finishes, writing nothing twice.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1
-- --leader-elect-renew-deadline (longer under ASan: a renewal through
-- 400 ms answers must not miss it before the test refuses them)
local RENEW_S = H.asan and 4 or 2

local function bound_count(srv)
  local n = 0
  for _, p in ipairs(srv:get("/api/v1/pods").items) do
    if p.spec.nodeName then n = n + 1 end
  end
  return n
end

local function holder(srv)
  local st, l = srv:request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/draengine")
  return st == 200 and l.spec.holderIdentity or nil
end

describe("draengine serve --parallel-binds losing its Lease", function()
  local srv, procs
  before_each(function()
    srv = K.start{ bookmark_ms = 300, seed = 41 }
    procs = {}
  end)
  after_each(function()
    local reports = S.stop_all(procs, 4000)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function replica(id)
    local p = S.start(srv, { "--leader-elect", "--leader-elect-identity=" .. id,
      "--leader-elect-lease-duration=" .. 2 * RENEW_S .. "s", "--leader-elect-renew-deadline=" .. RENEW_S .. "s",
      "--leader-elect-retry-period=300ms", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--watch-backoff=50ms", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s", "--parallel-binds=8" })
    procs[#procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    return p
  end

  it("sends no write past its renew deadline, leaves no pod bound without its claims, and a new leader finishes",
    function()
      srv:load(S.cluster(20, 8))
      local pods, claims = S.workload(240, "l")
      srv:load(claims)
      local a = replica("replica-a")
      assert.is_truthy(K.wait_for(function() return holder(srv) == "replica-a" end, 10 * SLOW, 0.1), a:stderr())
      -- slow answers: the 8 workers have writes of up to 16 pods queued
      srv:faults{ slow_ms = H.asan and 800 or 400 }
      srv:load(pods)
      assert.is_truthy(K.wait_for(function() return bound_count(srv) >= 8 end, 60 * SLOW, 0.1), a:stderr())
      -- every renewal is refused from now on (and retried by the client)
      srv:faults{ rules = { { method = "PUT", path = "/leases/", status = 500, count = 1000000 } } }
      local rc = a:wait(40 * SLOW)
      local log = a:stderr()
      assert.are.equal(1, rc, log:sub(-3000))
      assert.truthy(log:find("leader election lost", 1, true), log:sub(-3000))
      -- writes were queued when the deadline came: they were dropped, not sent
      assert.truthy(log:find("not written: leadership not renewed in time", 1, true) or
        log:find("not sent: past the write deadline", 1, true), log:sub(-3000))
      srv:faults{ slow_ms = 0, clear_rules = true }
      local mid = bound_count(srv)
      assert.is_true(mid < #pods, "every pod was bound before the loss: nothing was tested")

      -- no write of replica-a arrived after the renew deadline of its last
      -- renewal (that renewal began before its PUT arrived; 0.5 s for a
      -- request checked just before the deadline to reach the server)
      local writes = srv:writes()
      local last_ok
      for _, w in ipairs(writes) do
        if w.resource == "leases" and w.method == "PUT" and w.status == 200 and w.userAgent:find("replica-a", 1, true) then
          last_ok = math.max(last_ok or 0, w.start)
        end
      end
      assert.truthy(last_ok, "replica-a never renewed its Lease")
      local late, last_write = {}, 0
      for _, w in ipairs(writes) do
        if w.resource ~= "leases" and w.userAgent:find("replica-a", 1, true) then
          last_write = math.max(last_write, w.start)
          if w.start > last_ok + RENEW_S + 0.5 * SLOW then
            late[#late + 1] = string.format("%s %s +%.2fs", w.method, w.path, w.start - last_ok - RENEW_S)
          end
        end
      end
      assert.are.same({}, late)
      assert.is_true(last_write > 0)

      -- what replica-a left: every bound pod has its claims allocated,
      -- reserved for it and protected (S.check), only unbound pods remain
      local bad = S.check(srv)
      local other = {}
      for _, b in ipairs(bad) do
        if not b:find(" is not bound", 1, true) then other[#other + 1] = b end
      end
      assert.are.same({}, other)

      -- a new leader takes over once the Lease has expired and finishes,
      -- binding what was left and writing no claim that was written
      local b = replica("replica-b")
      local done = K.wait_for(function() return bound_count(srv) == #pods end, 90 * SLOW, 0.5)
      assert.is_true(done, "bound " .. bound_count(srv) .. " of " .. #pods .. "\n" .. b:stderr():sub(-3000))
      assert.are.equal("replica-b", holder(srv))
      bad = S.check(srv)
      assert.are.same({}, bad)
      -- no pod was bound twice, and replica-b bound only what was left
      local binds = {}
      for _, w in ipairs(srv:writes()) do
        if w.subresource == "binding" and w.status == 201 then
          assert.is_nil(binds[w.name], "pod " .. w.name .. " bound twice")
          binds[w.name] = w.userAgent:find("replica-b", 1, true) and "b" or "a"
        end
      end
      local by_a = 0
      for _, who in pairs(binds) do if who == "a" then by_a = by_a + 1 end end
      assert.are.equal(mid, by_a)
      assert.are.equal(0, b:stop())
    end)
end)
