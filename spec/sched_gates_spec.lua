-- sched_gates_spec.lua - scheduler gates that change how `draengine serve`
-- works rather than what it allocates: SchedulerPreQueueingHints (KEP-6132)
-- narrows a ResourceClaim event to the pods waiting for that claim; without
-- it every unschedulable pod is checked, as kube-scheduler then does.  The
-- decisions are the same either way; /metrics shows the difference.
local K = require "support.kubeapi"
local S = require "support.serve"

-- the node a pod of the test server is bound to, or nil
local function node_of(srv, name)
  for _, pod in ipairs(srv:state().objects.pods) do
    if pod.metadata.name == name then return pod.spec.nodeName end
  end
end

local function metric(body, name, labels)
  local v = body:match(name:gsub("%-", "%%-") .. "{" .. labels:gsub("[%-%.%[%]%(%)%+%*%?%^%$]", "%%%0") .. "} (%d+)")
  return tonumber(v)
end

describe("draengine serve and SchedulerPreQueueingHints", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 11 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  -- six pods wait for claims that do not exist yet; then one claim appears
  local function scenario(gates)
    local objs = S.cluster(1, 4)
    for i = 1, 6 do
      objs[#objs + 1] = K.pod("default", "waits-" .. i, { claims = { { name = "gpu", resourceClaimName = "later-" .. i } } })
    end
    srv:load(objs)
    local args = { "--leader-elect=false" }
    if gates then args[#args + 1] = "--feature-gates=" .. gates end
    local p = S.start(srv, args)
    procs[#procs + 1] = p
    assert.is_truthy(K.wait_for(function()
      local _, m = p:http("/metrics")
      return (metric(m, "draengine_scheduler_pending_pods", 'queue="unschedulable"') or 0) == 6
    end, 20), p:stderr())
    local _, before = p:http("/metrics")
    srv:load{ K.claim("default", "later-1", "gpu", 1) }
    local bound = K.wait_for(function()
      for _, pod in ipairs(srv:state().objects.pods) do
        if pod.metadata.name == "waits-1" and pod.spec.nodeName then return pod end
      end
    end, 20)
    assert.is_truthy(bound, p:stderr())
    local _, after = p:http("/metrics")
    local checked = metric(after, "draengine_scheduler_queueing_hint_pods_checked_total", 'event="claim"') -
      metric(before, "draengine_scheduler_queueing_hint_pods_checked_total", 'event="claim"')
    local narrowed = metric(after, "draengine_scheduler_pre_queueing_hint_evaluations_total",
      'plugin="DynamicResources",result="narrowed"')
    return checked, narrowed
  end

  it("checks every unschedulable pod on a claim event by default (alpha, off)", function()
    local checked, narrowed = scenario(nil)
    assert.is_true(checked >= 6, tostring(checked))
    assert.are.equal(0, narrowed)
  end)

  it("looks up only the waiting pods with the gate on, and schedules the same", function()
    local checked, narrowed = scenario("SchedulerPreQueueingHints=true")
    assert.is_true(checked < 6, tostring(checked))
    assert.is_true(narrowed >= 1)
  end)

  -- pods whose claims ask for a DeviceClass that does not exist yet wait
  -- for their claims' events; the class's creation brings them back (the
  -- claims pods wait for are looked at, not every claim)
  for _, gates in ipairs({ false, true }) do
    it("brings pods back when their claims' DeviceClass appears" .. (gates and " (gate on)" or ""), function()
      local objs = S.cluster(1, 4)
      for i = 1, 3 do
        objs[#objs + 1] = K.claim("default", "late-" .. i, "late", 1)
        objs[#objs + 1] = K.pod("default", "late-pod-" .. i, { claims = { { name = "gpu", resourceClaimName = "late-" .. i } } })
      end
      objs[#objs + 1] = K.claim("default", "other", "gpu", 1)
      srv:load(objs)
      local args = { "--leader-elect=false" }
      if gates then args[#args + 1] = "--feature-gates=SchedulerPreQueueingHints=true" end
      local p = S.start(srv, args)
      procs[#procs + 1] = p
      assert.is_truthy(K.wait_for(function()
        local _, m = p:http("/metrics")
        return (metric(m, "draengine_scheduler_pending_pods", 'queue="unschedulable"') or 0) == 3
      end, 20), p:stderr())
      srv:load{ K.class("late", "gpu.example.com") }
      local function bound()
        local n = 0
        for _, pod in ipairs(srv:state().objects.pods) do
          if pod.spec.nodeName then n = n + 1 end
        end
        return n == 3
      end
      assert.is_truthy(K.wait_for(bound, 20), p:stderr())
    end)
  end
end)

describe("draengine serve and GenericWorkload", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 12 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function member(name, group)
    local p = K.pod("default", name, {})
    p.spec.schedulingGroup = { podGroupName = group }
    return p
  end
  local function gang(name, min)
    return { apiVersion = "scheduling.k8s.io/v1beta1", kind = "PodGroup", metadata = { name = name, namespace = "default" },
      spec = { schedulingPolicy = { gang = { minCount = min } } } }
  end
  local function bound(name) return node_of(srv, name) end
  it("holds a gang until minCount of its pods exist (GangScheduling's PreEnqueue)", function()
    local objs = S.cluster(1, 1)
    objs[#objs + 1] = gang("trio", 3)
    objs[#objs + 1] = member("trio-1", "trio")
    objs[#objs + 1] = member("trio-2", "trio")
    objs[#objs + 1] = member("lonely", "nowhere")
    srv:load(objs)
    local p = S.start(srv, { "--leader-elect=false", "--feature-gates=GenericWorkload=true", "-v", "4" })
    procs[#procs + 1] = p
    -- gated as PreEnqueue gates: logged, no FailedScheduling Event
    assert.is_truthy(K.wait_for(function()
      local log = p:stderr()
      return log:find("gated: pod default/trio-2: waiting for minCount pods from a gang to appear in scheduling queue", 1, true)
        and log:find("gated: pod default/lonely: waiting for pods's pod group \\\"nowhere\\\" to appear in scheduling queue", 1, true)
    end, 20), p:stderr())
    assert.is_nil(bound("trio-1"))
    for _, e in ipairs(srv:state().objects.events or {}) do assert.are_not.equal("trio-1", e.regarding.name) end
    srv:load{ member("trio-3", "trio") }
    assert.is_truthy(K.wait_for(function() return bound("trio-1") and bound("trio-2") and bound("trio-3") end, 20),
      p:stderr())
    srv:load{ gang("nowhere", 1) }
    assert.is_truthy(K.wait_for(function() return bound("lonely") end, 20), p:stderr())
  end)

  it("is off by default: schedulingGroup is not read", function()
    local objs = S.cluster(1, 1)
    objs[#objs + 1] = member("trio-1", "trio")
    srv:load(objs)
    local p = S.start(srv, { "--leader-elect=false" })
    procs[#procs + 1] = p
    assert.is_truthy(K.wait_for(function() return bound("trio-1") end, 20), p:stderr())
  end)
end)

-- kube-scheduler's PreEnqueue keeps a pod whose claim does not exist yet out
-- of the active queue without counting an attempt, so the event that lifts
-- the gate sends it straight back: no backoff, however long
-- --pod-initial-backoff is.  (A pod made from a template is always gated
-- first: it exists before the claim controller has made its claim.)
describe("draengine serve and PreEnqueue gates", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 13, no_claim_controller = true }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("tries a gated pod as soon as its claim appears, without a backoff", function()
    local objs = S.cluster(1, 4)
    objs[#objs + 1] = K.pod("default", "named", { claims = { { name = "gpu", resourceClaimName = "later" } } })
    local tp = K.pod("default", "templated", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } })
    tp.metadata.uid = "7b0d2f4e-1c1a-4c55-9a61-0d5e7f6a1b2c"
    objs[#objs + 1] = tp
    srv:load(objs)
    -- a backoff would outlast every wait below
    local p = S.start(srv, { "--leader-elect=false", "--pod-initial-backoff=120s", "--pod-max-backoff=240s", "-v", "4" })
    procs[#procs + 1] = p
    assert.is_truthy(K.wait_for(function()
      local _, m = p:http("/metrics")
      return (metric(m, "draengine_scheduler_pending_pods", 'queue="unschedulable"') or 0) == 2
    end, 20), p:stderr())
    local log = p:stderr()
    assert.truthy(log:find('gated: pod default/named: resourceclaim \\"later\\" not found', 1, true), log)
    assert.truthy(log:find('gated: pod default/templated: pod \\"default/templated\\": waiting for the resource claim '
      .. 'controller to create the ResourceClaim for \\"gpu\\"', 1, true), log)
    -- what the claim controller does: the claim, owned by the pod, then the pod's status
    srv:load{ K.claim("default", "later", "gpu", 1) }
    local c = K.claim("default", "templated-gpu-k7x2q", "gpu", 1)
    c.metadata.ownerReferences = { { apiVersion = "v1", kind = "Pod", name = "templated", uid = tp.metadata.uid,
      controller = true } }
    srv:load{ c }
    local cur = srv:get("/api/v1/namespaces/default/pods/templated")
    cur.status.resourceClaimStatuses = { { name = "gpu", resourceClaimName = "templated-gpu-k7x2q" } }
    local st, _, err = srv:request("PUT", "/api/v1/namespaces/default/pods/templated/status", cur)
    assert.are.equal(200, st, tostring(err))
    assert.is_truthy(K.wait_for(function() return node_of(srv, "named") and node_of(srv, "templated") end, 30), p:stderr())
    -- gated is not an attempt: the two pods were each tried once, and placed
    local _, m = p:http("/metrics")
    assert.are.equal(2, metric(m, "draengine_scheduler_schedule_attempts_total", 'result="scheduled"'))
    assert.are.equal(0, metric(m, "draengine_scheduler_schedule_attempts_total", 'result="unschedulable"'))
    for _, e in ipairs(srv:state().objects.events or {}) do assert.are_not.equal("FailedScheduling", e.reason) end
  end)
end)

-- SchedulerPopFromBackoffQ (beta, on since 1.33): kube-scheduler's active
-- queue, when empty, pops the backoff queue, so a pod that an event made
-- worth retrying is not kept waiting by its backoff while nothing else needs
-- the scheduler.  Pods waiting for an event (unschedulable) stay put.
describe("draengine serve and SchedulerPopFromBackoffQ", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 14 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local function queued(p, queue)
    local _, m = p:http("/metrics")
    return metric(m, "draengine_scheduler_pending_pods", 'queue="' .. queue .. '"') or 0
  end

  -- one GPU: "first" takes it, "second" fails and backs off for 120 s; then
  -- a node with a free GPU appears, an event that makes "second" worth a try
  local function scenario(gates)
    local objs = S.cluster(1, 1)
    objs[#objs + 1] = K.claim("default", "first", "gpu", 1)
    objs[#objs + 1] = K.claim("default", "second", "gpu", 1)
    objs[#objs + 1] = K.pod("default", "first", { claims = { { name = "gpu", resourceClaimName = "first" } } })
    srv:load(objs)
    local args = { "--leader-elect=false", "--pod-initial-backoff=120s", "--pod-max-backoff=240s" }
    if gates then args[#args + 1] = "--feature-gates=" .. gates end
    local p = S.start(srv, args)
    procs[#procs + 1] = p
    assert.is_truthy(K.wait_for(function() return node_of(srv, "first") end, 20), p:stderr())
    srv:load{ K.pod("default", "second", { claims = { { name = "gpu", resourceClaimName = "second" } } }) }
    assert.is_truthy(K.wait_for(function() return queued(p, "unschedulable") == 1 end, 20), p:stderr())
    srv:load{ K.node("node-new"), K.slice("node-new", "gpu.example.com", 1) }
    return p
  end

  it("tries a backed-off pod at once when no other pod waits (the default)", function()
    local p = scenario(nil)
    assert.is_truthy(K.wait_for(function() return node_of(srv, "second") end, 30), p:stderr())
    assert.are.equal("node-new", node_of(srv, "second"))
    -- at least once: the slice's event may come before its node's, and the
    -- first try then fail again
    local _, m = p:http("/metrics")
    assert.is_true(metric(m, "draengine_scheduler_queue_incoming_pods_total", 'event="PopFromBackoffQ"') >= 1)
  end)

  it("leaves a pod whose writes failed to wait out its backoff (upstream's error backoff queue)", function()
    local objs = S.cluster(1, 1)
    objs[#objs + 1] = K.claim("default", "first", "gpu", 1)
    objs[#objs + 1] = K.pod("default", "first", { claims = { { name = "gpu", resourceClaimName = "first" } } })
    srv:load(objs)
    srv:faults{ rules = { { method = "POST", path = "binding", status = 403, count = 1 } } }
    local p = S.start(srv, { "--leader-elect=false", "--pod-initial-backoff=120s", "--pod-max-backoff=240s" })
    procs[#procs + 1] = p
    assert.is_truthy(K.wait_for(function() return queued(p, "backoff") == 1 end, 20), p:stderr())
    -- idle, and still not retried: a persistent error is not tried in a loop
    K.sleep(3)
    assert.is_nil(node_of(srv, "first"))
    assert.are.equal(1, queued(p, "backoff"))
    local _, m = p:http("/metrics")
    assert.are.equal(0, metric(m, "draengine_scheduler_queue_incoming_pods_total", 'event="PopFromBackoffQ"'))
  end)

  it("waits out the backoff with the gate off", function()
    local p = scenario("SchedulerPopFromBackoffQ=false")
    -- the node's event moved the pod to the backoff queue, where it stays
    assert.is_truthy(K.wait_for(function() return queued(p, "backoff") == 1 end, 20), p:stderr())
    K.sleep(3)
    assert.is_nil(node_of(srv, "second"))
    assert.are.equal(1, queued(p, "backoff"))
    local _, m = p:http("/metrics")
    assert.are.equal(0, metric(m, "draengine_scheduler_queue_incoming_pods_total", 'event="PopFromBackoffQ"'))
  end)
end)
