-- sched_events_spec.lua - serve's Events wait for the bindings
-- (engine/sched/sch_evq.h): with binding workers, a pod's Scheduled Event
-- is queued once its binding is written, workers take Events only when no
-- binding job waits (or --event-backlog Events wait), the Event's
-- eventTime is the decision's instant, and a graceful stop writes what is
-- queued.  The server answers every Event slowly here, so which write
-- waited for which shows in the server's own record of the writes.
local K = require "support.kubeapi"
local S = require "support.serve"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1
local NPODS = 16
local EVENT_MS = 300

local function micro_to_s(t)
  local y, mo, d, h, mi, s, frac = t:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.?(%d*)Z$")
  assert(y, "not a MicroTime: " .. tostring(t))
  local days = os.time{ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = 12 } // 86400
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s) +
    (frac ~= "" and tonumber("0." .. frac) or 0)
end

local function gpu_pod(name)
  return K.pod("default", name, { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } })
end

describe("serve's Events", function()
  local t = S.fixture{ bookmark_ms = 300, seed = 5 }
  before_each(t.setup)
  after_each(t.teardown)

  -- Starts serve with the flags given after the common ones; loads NPODS
  -- pods at once and waits until all are bound and every Scheduled Event
  -- is written; returns the writes the server recorded, by kind.
  local function play(extra)
    local srv = t.srv
    srv:load(S.cluster(8, 4))
    srv:faults{ rules = { { method = "POST", path = "/events$", delay_ms = EVENT_MS, count = 1000 } } }
    -- the pods and their claims exist before serve starts: it decides them
    -- in one burst, so its jobs are handed over back to back
    local pods = {}
    for i = 1, NPODS do pods[i] = gpu_pod(string.format("p-%04d", i)) end
    srv:load(pods)
    K.wait_for(function() return #srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims").items == NPODS end,
      10 * SLOW, 0.05)
    local args = { "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
      "--parallel-binds=2", "--pod-initial-backoff=100ms", "--pod-max-backoff=1s" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local p = S.start(srv, args)
    t.procs[#t.procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    local function events()
      local n = 0
      for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items) do
        if e.reason == "Scheduled" then n = n + 1 end
      end
      return n
    end
    K.wait_for(function() return S.pods_bound(srv) == NPODS and events() == NPODS end, 30 * SLOW, 0.1)
    assert.are.equal(NPODS, S.pods_bound(srv))
    assert.are.equal(NPODS, events())
    local _, m = p:http("/metrics")
    assert.are.equal(0, S.metric(m, "draengine_scheduler_events_pending"))
    assert.are.equal(NPODS, tonumber(m:match('draengine_scheduler_events_total{result="written"} (%d+)')))
    local w = { binding = {}, event = {} }
    for _, x in ipairs(srv:writes()) do
      if x.subresource == "binding" and x.status < 300 then w.binding[#w.binding + 1] = x end
      if x.resource == "events" and x.status < 300 then w.event[#w.event + 1] = x end
    end
    return w, srv, p
  end

  local function last_binding_answered(w)
    local last = 0
    for _, b in ipairs(w.binding) do last = math.max(last, b.time) end
    return last
  end

  local function events_after(w, when)
    local n = 0
    for _, e in ipairs(w.event) do if e.start >= when then n = n + 1 end end
    return n
  end

  it("writes the bindings first and the Scheduled Events after them, each with its decision's time", function()
    local w, srv = play()
    assert.are.equal(NPODS, #w.binding)
    assert.are.equal(NPODS, #w.event)
    -- Events in the jobs held each job's worker for one slow answer: only
    -- the last one or two could come after the last binding.  Queued
    -- behind the bindings, most do (a worker finding no job for an instant
    -- takes one Event).
    local after = events_after(w, last_binding_answered(w))
    assert.is_true(after >= NPODS - 4, ("only %d of %d Events after the last binding"):format(after, NPODS))
    -- eventTime: when the binding was answered, not when the Event went out
    local bound_at = {}
    for _, b in ipairs(w.binding) do bound_at[b.name] = b.time end
    local checked = 0
    for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items) do
      if e.reason == "Scheduled" then
        local at, bt = micro_to_s(e.eventTime), bound_at[e.regarding.name]
        assert.truthy(bt, "no binding for " .. e.regarding.name)
        assert.is_true(at >= bt - 0.001, ("%s: eventTime %.3f before its binding %.3f"):format(e.metadata.name, at, bt))
        checked = checked + 1
      end
    end
    assert.are.equal(NPODS, checked)
  end)

  it("--event-backlog 1 writes each Event before the next binding", function()
    local w = play{ "--event-backlog=1" }
    assert.are.equal(NPODS, #w.event)
    local after = events_after(w, last_binding_answered(w))
    -- two workers, each writing a waiting Event before its next job
    assert.is_true(after <= 4, ("%d of %d Events after the last binding"):format(after, NPODS))
  end)

  it("a graceful stop writes the Events still queued", function()
    local srv = t.srv
    srv:load(S.cluster(4, 4))
    srv:faults{ rules = { { method = "POST", path = "/events$", delay_ms = EVENT_MS, count = 1000 } } }
    local p = S.start(srv, { "--leader-elect=false", "--parallel-binds=2" })
    t.procs[#t.procs + 1] = p
    assert.truthy(p.port, "serve did not start: " .. p:stderr())
    local pods = {}
    for i = 1, 8 do pods[i] = gpu_pod(string.format("q-%04d", i)) end
    srv:load(pods)
    K.wait_for(function() return S.pods_bound(srv, "q-") == 8 end, 20 * SLOW, 0.05)
    assert.are.equal(8, S.pods_bound(srv, "q-"))
    -- some are still queued when the stop comes, or this would not test the flush
    local _, m = p:http("/metrics")
    assert.is_true(S.metric(m, "draengine_scheduler_events_pending") > 0, m)
    p:signal("TERM")
    assert.are.equal(0, p:wait(20))
    local n = 0
    for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/namespaces/default/events").items) do
      if e.reason == "Scheduled" then n = n + 1 end
    end
    assert.are.equal(8, n)
  end)

  it("refuses an --event-backlog out of range, naming the flag", function()
    for _, v in ipairs{ "0", "1048577", "x" } do
      local code, _, err = H.run{ "serve", "--kubeconfig", t.srv.kubeconfig, "--event-backlog", v }
      assert.are.equal(2, code)
      assert.truthy(err:find("--event-backlog", 1, true), err)
    end
  end)
end)
