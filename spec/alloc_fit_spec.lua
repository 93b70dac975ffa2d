-- alloc_fit_spec.lua - node fit beyond devices in `allocate` (the filters
-- kube-scheduler runs before DynamicResources, shared with `serve`):
-- cpu/memory and extended resources a device plugin offers count against
-- the node's allocatable together with the pods already placed there, and
-- the output shows the whole decision - every Pod in the List, scheduled
-- ones bound to their node, unschedulable ones with kube-scheduler's
-- PodScheduled=False condition.
local core = require "draengine.core"
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"
local json = { encode = core.json_encode, decode = core.json_decode }

-- the objects as one JSON List
local function yaml_of(objs)
  return json.encode({ apiVersion = "v1", kind = "List", items = objs })
end

-- A node with a device plugin for example.com/gpu (4), 4 cpus, and a
-- DeviceClass that would serve example.com/gpu through DRA elsewhere.
local function dp_cluster()
  local n = K.node("dp")
  n.status.allocatable = { cpu = "4", memory = "8Gi", pods = "10", ["example.com/gpu"] = "4" }
  return { n, K.class("gpu", "gpu.example.com", { extendedResourceName = "example.com/gpu" }) }
end

local function gpu_pod(name, n, cpu)
  return K.pod("default", name, { requests = { cpu = cpu or "100m", ["example.com/gpu"] = tostring(n) } })
end

local function by_name(list)
  local t = {}
  for _, o in ipairs(list) do t[o.kind .. "/" .. o.metadata.name] = o end
  return t
end

local function condition(pod)
  for _, c in ipairs(pod.status and pod.status.conditions or {}) do
    if c.type == "PodScheduled" then return c end
  end
end

describe("allocate: node resources", function()
  it("counts device-plugin capacity for extended resources, with the pods placed before", function()
    local objs = dp_cluster()
    objs[#objs + 1] = gpu_pod("three", 3)
    objs[#objs + 1] = gpu_pod("two", 2)   -- 1 left after "three": does not fit
    objs[#objs + 1] = gpu_pod("one", 1)   -- fits in what is left
    objs[#objs + 1] = gpu_pod("five", 5)  -- more than the node has at all
    local r = core.schedule{text = yaml_of(objs)}
    local got = {}
    for _, p in ipairs(r.pods) do got[p.name] = p end
    assert.are.equal("scheduled", got.three.status, got.three.reason)
    assert.are.equal("dp", got.three.node)
    assert.are.equal("unschedulable", got.two.status)
    assert.are.equal("0/1 nodes are available: 1 x Insufficient example.com/gpu", got.two.reason)
    assert.are.equal("0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are "
      .. "available: 1 No preemption victims found for incoming pod.", got.two.k8s_reason)
    assert.are.equal("scheduled", got.one.status, got.one.reason)
    -- asking for more than the node holds: preemption cannot help
    assert.are.equal("0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are "
      .. "available: 1 Preemption is not helpful for scheduling.", got.five.k8s_reason)
    -- the device plugin serves them: no claim was made
    assert.are.equal(0, #got.three.claims)
  end)

  it("counts cpu, memory and pods; every short resource is a reason", function()
    local n = K.node("small")
    n.status.allocatable = { cpu = "2", memory = "1Gi", pods = "2" }
    local objs = { n, K.class("gpu", "gpu.example.com"), K.slice("small", "gpu.example.com", 8),
      K.template("default", "one-gpu", "gpu", 1) }
    local function pod(name, cpu, mem)
      return K.pod("default", name, { requests = { cpu = cpu, memory = mem },
        claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } })
    end
    objs[#objs + 1] = pod("a", "1500m", "512Mi")
    objs[#objs + 1] = pod("b", "1", "768Mi")     -- cpu and memory short
    objs[#objs + 1] = pod("c", "500m", "512Mi")  -- exactly what is left
    objs[#objs + 1] = pod("d", "1m", "1Mi")      -- the node holds 2 pods
    local r = core.schedule{text = yaml_of(objs)}
    local st = {}
    for _, p in ipairs(r.pods) do st[p.name] = p end
    assert.are.equal("scheduled", st.a.status, st.a.reason)
    assert.are.equal("unschedulable", st.b.status)
    assert.are.equal("0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 "
      .. "nodes are available: 1 No preemption victims found for incoming pod.", st.b.k8s_reason)
    assert.are.equal("scheduled", st.c.status, st.c.reason)
    assert.are.equal("unschedulable", st.d.status)
    assert.matches("1 Too many pods", st.d.k8s_reason, 1, true)
    -- a pod that fails on resources allocated no devices
    assert.is_nil(st.b.claims)
  end)

  it("reports kube-scheduler's reasons per filter, counted over nodes and sorted", function()
    local objs = { K.class("gpu", "gpu.example.com"), K.template("default", "one-gpu", "gpu", 1) }
    local tainted = K.node("n-taint", { zone = "a" }, { spec = { taints = { { key = "x", value = "y", effect = "NoSchedule" } } } })
    local cordoned = K.node("n-cordon", { zone = "a" }, { spec = { unschedulable = true } })
    local other = K.node("n-zone", { zone = "b" })
    local empty = K.node("n-empty", { zone = "a" })
    for _, n in ipairs({ tainted, cordoned, other, empty }) do objs[#objs + 1] = n end
    objs[#objs + 1] = K.slice("n-taint", "gpu.example.com", 1)
    objs[#objs + 1] = K.pod("default", "p", { node_selector = { zone = "a" },
      claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } })
    local r = core.schedule{text = yaml_of(objs)}
    assert.are.equal("unschedulable", r.pods[1].status)
    assert.are.equal("0/4 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's node "
      .. "affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. preemption: 0/4 "
      .. "nodes are available: 4 Preemption is not helpful for scheduling.", r.pods[1].k8s_reason)
  end)

  it("preemptionPolicy Never: kube-scheduler does not look for victims", function()
    local objs = dp_cluster()
    local p = gpu_pod("big", 5)
    p.spec.preemptionPolicy = "Never"
    objs[#objs + 1] = p
    local r = core.schedule{text = yaml_of(objs)}
    assert.are.equal("0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: not eligible due to "
      .. "preemptionPolicy=Never.", r.pods[1].k8s_reason)
  end)
end)

describe("allocate -o json: the whole decision", function()
  it("prints every pod: bound to its node, or with PodScheduled=False and kube-scheduler's message", function()
    local objs = dp_cluster()
    objs[#objs + 1] = K.slice("dp", "gpu.example.com", 1)
    objs[#objs + 1] = K.template("default", "one-gpu", "gpu", 1)
    local claimed = K.pod("default", "claimed", { claims = { { name = "gpu", resourceClaimTemplateName = "one-gpu" } } })
    claimed.metadata.uid = "11111111-1111-4111-8111-111111111111"
    claimed.metadata.generation = 3
    objs[#objs + 1] = claimed
    objs[#objs + 1] = gpu_pod("plugin", 4)
    local late = gpu_pod("late", 1)
    late.metadata.generation = 2
    late.status.conditions = { { type = "PodScheduled", status = "False", reason = "Unschedulable", message = "old" } }
    objs[#objs + 1] = late
    local f = H.write_temp(yaml_of(objs), ".yaml")
    local rc, out, err = H.run{ "allocate", "-f", f, "-o", "json" }
    os.remove(f)
    assert.are.equal(1, rc, err)
    local list = json.decode(out)
    assert.are.equal("List", list.kind)
    local items = by_name(list.items)
    local p = items["Pod/claimed"]
    assert.are.equal("dp", p.spec.nodeName)
    assert.are.same({ type = "PodScheduled", status = "True", observedGeneration = 3 }, condition(p))
    -- the claim controller's record of the claim made from the template
    assert.are.equal(1, #p.status.resourceClaimStatuses)
    local cname = p.status.resourceClaimStatuses[1].resourceClaimName
    assert.are.equal("gpu", p.status.resourceClaimStatuses[1].name)
    assert.truthy(items["ResourceClaim/" .. cname].status.allocation)
    -- the claim comes before the pod it was allocated for
    local pos = {}
    for i, o in ipairs(list.items) do pos[o.kind .. "/" .. o.metadata.name] = i end
    assert.is_true(pos["ResourceClaim/" .. cname] < pos["Pod/claimed"])
    assert.are.equal("dp", items["Pod/plugin"].spec.nodeName)
    local l = items["Pod/late"]
    assert.is_nil(l.spec.nodeName)
    local c = condition(l)
    assert.are.same({ type = "PodScheduled", status = "False", reason = "Unschedulable", observedGeneration = 2,
      message = "0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are available: 1 "
        .. "No preemption victims found for incoming pod." }, c)
    local n = 0
    for _, o in ipairs(l.status.conditions) do if o.type == "PodScheduled" then n = n + 1 end end
    assert.are.equal(1, n, "the old condition is replaced, not repeated")
    -- yaml carries the same objects
    rc, out = H.run{ "allocate", "-f", H.write_temp(yaml_of(objs), ".yaml"), "-o", "yaml" }
    assert.are.equal(1, rc)
    assert.matches("reason: Unschedulable", out, 1, true)
    assert.matches("nodeName: dp", out, 1, true)
  end)
end)

describe("serve agrees with allocate on node resources", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 17 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("places the same pods and refuses the same one", function()
    local objs = dp_cluster()
    local pods = { gpu_pod("three", 3), gpu_pod("two", 2) }
    local r = core.schedule{text = yaml_of((function()
      local all = {}
      for _, o in ipairs(objs) do all[#all + 1] = o end
      for _, o in ipairs(pods) do all[#all + 1] = o end
      return all
    end)())}
    assert.are.equal("scheduled", r.pods[1].status)
    assert.are.equal("unschedulable", r.pods[2].status)
    srv:load(objs)
    procs[#procs + 1] = S.start(srv, { "--leader-elect=false" })
    srv:load{ pods[1] }
    assert.truthy(K.wait_for(function() return srv:get("/api/v1/namespaces/default/pods/three").spec.nodeName end,
      15 * (H.asan and 3 or 1), 0.1))
    srv:load{ pods[2] }
    local ev = K.wait_for(function()
      for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/events").items) do
        if e.reason == "FailedScheduling" and e.regarding.name == "two" and
            (e.note or ""):find("Insufficient example.com/gpu", 1, true) then return e end
      end
    end, 15 * (H.asan and 3 or 1), 0.1)
    assert.truthy(ev, "a FailedScheduling event for the pod that does not fit")
    assert.matches("Insufficient example.com/gpu", ev.note, 1, true)
    assert.is_nil(srv:get("/api/v1/namespaces/default/pods/two").spec.nodeName)
  end)
end)
