-- alloc_rollback_spec.lua - a rejected candidate gives back what it charged
-- (Kubernetes 1.37's rollbackDevice). v0.36.2 kept the shared counters of a
-- device rejected for a taint, a constraint or its capacity, so a later
-- device of the same counter set looked exhausted; the real kube-scheduler
-- 1.37.2 (spec/e2e/diff, seed 6) does not, and neither may draengine.
local core = require "draengine.core"

local HEAD = [[
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-counters}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - {name: gpu-a, counters: {mem: {value: "8"}}}
  - {name: gpu-b, counters: {mem: {value: "8"}}}
  - {name: gpu-c, counters: {mem: {value: "8"}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-devices}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 2}
  devices:
]]

local function device(name, set, mem, numa, extra)
  return string.format([[
  - name: %s
    attributes: {numa: {int: %d}}
    consumesCounters: [{counterSet: %s, counters: {mem: {value: "%s"}}}]
%s]], name, numa, set, mem, extra or "")
end

local function claim(body)
  return "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\nspec:\n  devices:\n" .. body
end

local function devices(r)
  local out = {}
  for _, x in ipairs(r.claims[1].allocation.devices.results) do out[#out + 1] = x.device end
  return out
end

describe("a rejected candidate gives back its counters (1.37 rollback)", function()
  it("after a constraint rejects it: backtracking finds the aligned pair", function()
    local text = HEAD .. device("gpu-a", "gpu-a", "8", 0) .. device("gpu-b", "gpu-b", "8", 1) ..
      device("gpu-c", "gpu-c", "8", 1) .. claim([[
    requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]
    constraints: [{requests: [gpu], matchAttribute: gpu.example.com/numa}]
]])
    local r = core.allocate{ node = "node-1", text = text }
    assert.are.equal("allocated", r.status, r.reason or r.error)
    assert.are.same({ "gpu-b", "gpu-c" }, devices(r))
  end)

  it("after a taint rejects it: a partition of the same GPU is still available", function()
    local taint = "    taints: [{key: example.com/xid, value: '79', effect: NoSchedule}]\n"
    local text = HEAD .. device("gpu-a", "gpu-a", "8", 0, taint) .. device("gpu-a-half", "gpu-a", "4", 0) .. claim([[
    requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
]])
    local r = core.allocate{ node = "node-1", text = text }
    assert.are.equal("allocated", r.status, r.reason or r.error)
    assert.are.same({ "gpu-a-half" }, devices(r))
  end)

  it("after its capacity rejects it: the next device of the counter set is allocated", function()
    local small = "    allowMultipleAllocations: true\n    capacity: {memory: {value: 1Gi}}\n"
    local big = "    allowMultipleAllocations: true\n    capacity: {memory: {value: 8Gi}}\n"
    local text = HEAD .. device("gpu-a-small", "gpu-a", "8", 0, small) .. device("gpu-a-big", "gpu-a", "8", 0, big) ..
      claim([[
    requests: [{name: gpu, exactly: {deviceClassName: gpu, capacity: {requests: {memory: 4Gi}}}}]
]])
    local r = core.allocate{ node = "node-1", text = text }
    assert.are.equal("allocated", r.status, r.reason or r.error)
    assert.are.same({ "gpu-a-big" }, devices(r))
  end)

  it("still fails when the counters are truly spent", function()
    local text = HEAD .. device("gpu-a", "gpu-a", "8", 0) .. device("gpu-a-half", "gpu-a", "4", 0) .. claim([[
    requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]
]])
    local r = core.allocate{ node = "node-1", text = text }
    assert.are.equal("unsatisfiable", r.status)
  end)
end)
