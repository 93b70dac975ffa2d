-- alloc_nar_spec.lua - node allocatable resources (KEP-5517, gate
-- DRANodeAllocatableResources, alpha): devices mapped to node resources
-- (nodeAllocatableResources) take cpu/memory from their node together with
-- the pod's own requests, in `allocate` and in `serve`, which also writes
-- pod.status.nodeAllocatableResourceClaimStatuses.  With the gate off the
-- mappings are ignored, as upstream does.
local core = require "draengine.core"
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"

local SLOW = H.asan and 3 or 1
local GATE = "DRANodeAllocatableResources=true"

local function list(objs)
  return core.json_encode({ apiVersion = "v1", kind = "List", items = objs })
end

-- n1: 4 cpus, 8Gi; four exclusive cores that are node cpus, and a memory
-- device shared by capacity whose consumption is node memory; a NIC with an
-- overhead per pod and per container.
local function cluster()
  local n = K.node("n1")
  n.status.allocatable = { cpu = "4", memory = "8Gi", pods = "10" }
  local devs = {}
  for i = 0, 3 do
    devs[#devs + 1] = { name = "core-" .. i, attributes = { kind = { string = "core" } },
      nodeAllocatableResources = { cpu = { mapping = { deviceMultiplier = "1" } } } }
  end
  devs[#devs + 1] = { name = "mem-0", attributes = { kind = { string = "mem" } }, allowMultipleAllocations = true,
    capacity = { memory = { value = "64Gi" } },
    nodeAllocatableResources = { memory = { mapping = { capacityKey = "memory", capacityMultiplier = "1" } } } }
  devs[#devs + 1] = { name = "nic-0", attributes = { kind = { string = "nic" } }, allowMultipleAllocations = true,
    nodeAllocatableResources = { memory = { overhead = { perPod = "100Mi", perContainer = "10Mi" } } } }
  local slice = { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "n1-host" },
    spec = { driver = "host.example.com", nodeName = "n1", pool = { name = "n1", generation = 1, resourceSliceCount = 1 },
      devices = devs } }
  local function class(name, kind)
    return { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = name },
      spec = { selectors = { { cel = { expression = 'device.attributes["host.example.com"].kind == "' .. kind .. '"' } } } } }
  end
  return { n, slice, class("core", "core"), class("mem", "mem"), class("nic", "nic") }
end

local function claim(name, class, count, capacity)
  local c = K.claim("default", name, class, count)
  if capacity then c.spec.devices.requests[1].exactly.capacity = { requests = capacity } end
  return c
end

-- a pod with one container per name in `ctrs`, each naming claim "c"
local function pod(name, cpu, mem, claim_name, ctrs)
  local p = K.pod("default", name, { requests = { cpu = cpu, memory = mem },
    claims = { { name = "c", resourceClaimName = claim_name } } })
  p.metadata.uid = name .. "-0000-4000-8000-000000000000"
  if ctrs then
    local cs = {}
    for _, c in ipairs(ctrs) do
      cs[#cs + 1] = { name = c, image = "x", resources = { requests = { cpu = "1m" }, claims = { { name = "c" } } } }
    end
    p.spec.containers = cs
  end
  return p
end

local function by(r)
  local t = {}
  for _, p in ipairs(r.pods) do t[p.name] = p end
  return t
end

describe("node allocatable resources in allocate", function()
  it("mapped cores count as node cpu with the pod's requests; the gate off ignores them", function()
    local objs = cluster()
    objs[#objs + 1] = claim("two-cores", "core", 2)
    objs[#objs + 1] = claim("one-core", "core", 1)
    objs[#objs + 1] = pod("a", "1", "1Gi", "two-cores")   -- 1 + 2 cores = 3 of 4 cpus
    objs[#objs + 1] = pod("b", "500m", "1Gi", "one-core") -- 1.5 more: does not fit
    local on = by(core.schedule{ text = list(objs), gates = GATE })
    assert.are.equal("scheduled", on.a.status, on.a.reason)
    assert.are.equal("unschedulable", on.b.status)
    assert.are.equal("0/1 nodes are available: 1 x Insufficient cpu", on.b.reason)
    assert.are.equal("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No "
      .. "preemption victims found for incoming pod.", on.b.k8s_reason)
    -- without the gate the node is overcommitted, as upstream without it
    local off = by(core.schedule{ text = list(objs) })
    assert.are.equal("scheduled", off.a.status)
    assert.are.equal("scheduled", off.b.status, off.b.reason)
  end)

  it("consumed capacity times the multiplier is node memory", function()
    local objs = cluster()
    objs[#objs + 1] = claim("mem-a", "mem", 1, { memory = "4Gi" })
    objs[#objs + 1] = claim("mem-b", "mem", 1, { memory = "4Gi" })
    objs[#objs + 1] = pod("a", "100m", "2Gi", "mem-a") -- 2Gi + 4Gi
    objs[#objs + 1] = pod("b", "100m", "2Gi", "mem-b") -- 6Gi more: 12Gi > 8Gi
    local r = by(core.schedule{ text = list(objs), gates = GATE })
    assert.are.equal("scheduled", r.a.status, r.a.reason)
    assert.are.equal("unschedulable", r.b.status)
    assert.matches("Insufficient memory", r.b.k8s_reason, 1, true)
  end)

  it("prints nodeAllocatableResourceClaimStatuses on the pod: mapping, overhead per pod and per container", function()
    local objs = cluster()
    objs[#objs + 1] = claim("cores", "core", 2)
    objs[#objs + 1] = claim("nic", "nic", 1)
    local p = pod("p", "100m", "100Mi", "cores")
    p.spec.resourceClaims[#p.spec.resourceClaims + 1] = { name = "n", resourceClaimName = "nic" }
    p.spec.containers = {
      { name = "main", image = "x", resources = { claims = { { name = "c" }, { name = "n" } } } },
      { name = "side", image = "x", resources = { claims = { { name = "n" } } } },
    }
    objs[#objs + 1] = p
    local f = H.write_temp(list(objs), ".json")
    local rc, out, err = H.run{ "allocate", "-f", f, "--feature-gates", GATE, "-o", "json" }
    os.remove(f)
    assert.are.equal(0, rc, err)
    local pod_out
    for _, o in ipairs(core.json_decode(out).items) do if o.kind == "Pod" then pod_out = o end end
    assert.are.same({
      { resourceClaimName = "cores", containers = { "main" }, mapping = { { name = "cpu", quantity = "2" } } },
      { resourceClaimName = "nic", containers = { "main", "side" },
        overhead = { { name = "memory", perPod = "100Mi", perContainer = "10Mi" } } },
    }, pod_out.status.nodeAllocatableResourceClaimStatuses)
    -- without the gate nothing is written
    f = H.write_temp(list(objs), ".json")
    rc, out = H.run{ "allocate", "-f", f, "-o", "json" }
    os.remove(f)
    assert.are.equal(0, rc)
    for _, o in ipairs(core.json_decode(out).items) do
      if o.kind == "Pod" then assert.is_nil(o.status.nodeAllocatableResourceClaimStatuses) end
    end
  end)

  it("a claim with a mapped device reserved for another pod cannot be shared", function()
    local objs = cluster()
    local c = claim("taken", "core", 1)
    c.status = { allocation = { devices = { results = { { request = "gpu", driver = "host.example.com", pool = "n1",
      device = "core-0" } } } }, reservedFor = { { resource = "pods", name = "owner", uid = "owner-uid" } } }
    objs[#objs + 1] = c
    objs[#objs + 1] = pod("second", "100m", "100Mi", "taken")
    local r = by(core.schedule{ text = list(objs), gates = GATE })
    assert.are.equal("unschedulable", r.second.status)
    assert.matches("node allocatable resource claim taken has a mapped device and cannot be shared across pods",
      r.second.k8s_reason, 1, true)
    -- without the gate the claim is shared as any other
    assert.are.equal("scheduled", by(core.schedule{ text = list(objs) }).second.status)
  end)

  it("pods bound before count what their statuses say their devices take", function()
    local objs = cluster()
    local bound = pod("bound", "500m", "100Mi", "elsewhere")
    bound.spec.nodeName = "n1"
    bound.status.nodeAllocatableResourceClaimStatuses = { { resourceClaimName = "elsewhere",
      mapping = { { name = "cpu", quantity = "3" } } } }
    objs[#objs + 1] = bound
    objs[#objs + 1] = claim("one-core", "core", 1)
    objs[#objs + 1] = pod("p", "100m", "100Mi", "one-core") -- 0.5 + 3 + 0.1 + 1 > 4
    local r = by(core.schedule{ text = list(objs), gates = GATE })
    assert.are.equal("unschedulable", r.p.status)
    assert.matches("Insufficient cpu", r.p.k8s_reason, 1, true)
  end)
end)

describe("node allocatable resources in serve", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 31 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  it("writes the statuses before binding and refuses the pod that would overcommit the node", function()
    srv:load(cluster())
    srv:load{ claim("two-cores", "core", 2), claim("one-core", "core", 1) }
    procs[#procs + 1] = S.start(srv, { "--leader-elect=false", "--feature-gates=" .. GATE })
    srv:load{ pod("a", "1", "1Gi", "two-cores") }
    local a = K.wait_for(function()
      local q = srv:get("/api/v1/namespaces/default/pods/a")
      return q.spec.nodeName and q
    end, 15 * SLOW, 0.1)
    assert.truthy(a, "pod a was not bound")
    assert.are.same({ { resourceClaimName = "two-cores", containers = { "main" },
      mapping = { { name = "cpu", quantity = "2" } } } }, a.status.nodeAllocatableResourceClaimStatuses)
    srv:load{ pod("b", "500m", "1Gi", "one-core") }
    local ev = K.wait_for(function()
      for _, e in ipairs(srv:get("/apis/events.k8s.io/v1/events").items) do
        if e.reason == "FailedScheduling" and e.regarding.name == "b" and
            (e.note or ""):find("Insufficient cpu", 1, true) then return e end
      end
    end, 15 * SLOW, 0.1)
    assert.truthy(ev, "pod b was not refused")
    assert.matches("Insufficient cpu", ev.note, 1, true)
    assert.is_nil(srv:get("/api/v1/namespaces/default/pods/b").spec.nodeName)
    -- the devices are free; only the node's cpu is short
    local c = srv:get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/one-core")
    assert.is_nil(c.status and c.status.allocation)
  end)
end)
