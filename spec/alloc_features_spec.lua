-- alloc_features_spec.lua - 1.37 alpha features beyond the upstream vectors:
-- derived attributes (KEP-6080) and device compatibility groups (KEP-5963).
local core = require "draengine.core"
local H = require "support.helper"

local F = H.root .. "/spec/fixtures/alloc/"

local function devices(r, i)
  local out = {}
  for _, x in ipairs(r.claims[i or 1].allocation.devices.results) do
    out[#out + 1] = x.request .. "=" .. x.device
  end
  return out
end

describe("derived attributes (DRADerivedAttributes)", function()
  it("match two drivers' NUMA attributes under one derived name, backtracking to the aligned pair", function()
    local r = core.allocate{node = "node-1", file = F .. "derived-numa.yaml", gates = "DRADerivedAttributes=true"}
    assert.are.equal("allocated", r.status, r.reason or r.error)
    assert.are.same({"gpu=gpu-1", "nic=nic-0"}, devices(r))
  end)

  it("are ignored while the gate is off (the constraint then finds no attribute)", function()
    local r = core.allocate{node = "node-1", file = F .. "derived-numa.yaml"}
    assert.are.equal("unsatisfiable", r.status)
    assert.matches("lack the attribute of a constraint (derived.example.com/numa)", r.reason, 1, true)
  end)

  it("shadow a published attribute of the same name for the request that derives it", function()
    -- the NIC request derives gpu.example.com/numa (a name the NIC driver does
    -- not publish) from its own numaNode; the GPU request reads the GPU's
    -- published attribute
    local text = H.read_file(F .. "derived-numa.yaml"):gsub("\n%-%-%-\napiVersion: resource%.k8s%.io/v1\nkind: ResourceClaim\n.*$", "\n") .. [[
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shadow, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
    - name: nic
      exactly:
        deviceClassName: nic.example.com
        derivedAttributes:
        - name: gpu.example.com/numa
          expression: device.attributes["nic.example.com"].numaNode
    constraints:
    - requests: [gpu, nic]
      matchAttribute: gpu.example.com/numa
]]
    local r = core.allocate{node = "node-1", text = text, gates = "DRADerivedAttributes=true"}
    assert.are.equal("allocated", r.status, r.reason or r.error)
    assert.are.same({"gpu=gpu-1", "nic=nic-0"}, devices(r))
  end)

  it("turn a CEL runtime error into a hard error naming the expression's device", function()
    local text = H.read_file(F .. "derived-numa.yaml"):gsub("%.numaNode\n", ".noSuchAttribute\n")
    local r = core.allocate{node = "node-1", text = text, gates = "DRADerivedAttributes=true"}
    assert.are.equal("error", r.status)
    assert.matches("derived attribute derived.example.com/numa on device nic.example.com/node-1/nic-0: CEL runtime error", r.error, 1, true)
    assert.matches("no such key: noSuchAttribute", r.error, 1, true)
  end)
end)

describe("compatibility groups (DRADeviceCompatibilityGroups)", function()
  local function claim(name, sel, count)
    return string.format([[
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: %d
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].type == "%s"'}
]], name, count or 1, sel)
  end
  local base = F .. "compat-groups.yaml"
  local on = "DRADeviceCompatibilityGroups=true"

  it("admits a device sharing a group with the allocated ones", function()
    local r = core.allocate{node = "node-1", files = {base}, text = claim("more-mig", "mig"), gates = on}
    assert.are.equal("allocated", r.status, r.reason)
    assert.are.same({"gpu=mig-1"}, devices(r))
  end)

  it("rejects a device of another group on the same counter set, counters notwithstanding", function()
    local r = core.allocate{node = "node-1", files = {base}, text = claim("a-vgpu", "vgpu"), gates = on}
    assert.are.equal("unsatisfiable", r.status)
    assert.matches("compatibility groups", r.reason, 1, true)
  end)

  it("keeps one claim's devices in one group too", function()
    -- without the running claim: vgpu-0 first, then no mig fits beside it
    local text = H.read_file(base):gsub("\n%-%-%-\napiVersion: resource%.k8s%.io/v1\nkind: ResourceClaim\n.*$", "\n")
    local two = [[
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: mixed, namespace: default}
spec:
  devices:
    requests:
    - name: any
      exactly: {deviceClassName: gpu.example.com}
    - name: mig
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].type == "mig"'}
]]
    local r = core.allocate{node = "node-1", text = text .. "---\n" .. two, gates = on}
    assert.are.equal("allocated", r.status, r.reason)
    -- "any" first tries vgpu-0, which leaves no compatible mig: backtrack to mig-0
    assert.are.same({"any=mig-0", "mig=mig-1"}, devices(r))
  end)

  it("skips grouped devices while the gate is off", function()
    local r = core.allocate{node = "node-1", files = {base}, text = claim("more-mig", "mig")}
    assert.are.equal("unsatisfiable", r.status)
    assert.matches("declare compatibilityGroups (DRADeviceCompatibilityGroups is off)", r.reason, 1, true)
  end)
end)
