-- sched_gates_spec.lua - scheduler gates that change how `draengine serve`
-- works rather than what it allocates: SchedulerPreQueueingHints (KEP-6132)
-- narrows a ResourceClaim event to the pods waiting for that claim; without
-- it every unschedulable pod is checked, as kube-scheduler then does.  The
-- decisions are the same either way; /metrics shows the difference.
local K = require "support.kubeapi"
local S = require "support.serve"

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
end)
