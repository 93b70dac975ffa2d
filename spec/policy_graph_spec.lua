-- policy_graph_spec.lua - policy facts in the device graph and in
-- allocation: derived attributes seen by CEL and constraints, compatibility
-- groups, admit, scores, and Kubernetes-exact results without policies.
local core = require "draengine.core"
local H = require "support.helper"
local P = require "fixtures.policy.helper"

local root = H.root
local FIX = root .. "/policies/spec/fixtures/"
local POL = root .. "/policies"
local SPECFIX = root .. "/spec/fixtures/policy/"

describe("a policy host on a device graph", function()
  local g, host

  before_each(function()
    g = core.graph()
    g:load(FIX .. "oci-gb200.yaml")
    g:load(FIX .. "aks-a100-mig.yaml")
    host = core.policy_host(g, POL)
  end)

  after_each(function()
    host:close() -- before the graph goes away
    host, g = nil, nil
  end)

  it("publishes derived attributes into the graph, where device views show them", function()
    local gpu = g:device("gpu.nvidia.com", "10.140.65.248", "gpu-2")
    assert.are.equal(1, gpu.derived["resource.kubernetes.io/numaNode"])
    assert.are.equal("h200-class", gpu.derived["tier.draengine.io/class"])
    local nic = g:device("dra.net", "10.140.65.248", "pci-0010-03-00-0")
    assert.are.equal(1, nic.derived["resource.kubernetes.io/numaNode"])
    assert.is_nil(nic.derived["tier.draengine.io/class"])
  end)

  it("answers the allocator's groups hook from its cache", function()
    local whole = host:groups("gpu.nvidia.com", "aks-a100-1", "gpu-0")
    local mig = host:groups("gpu.nvidia.com", "aks-a100-1", "gpu-0-mig-1g10gb-19-0")
    assert.are.equal(whole.scope, mig.scope)
    assert.are.same({ "whole" }, whole.groups)
    assert.are.same({ "partition" }, mig.groups)
    assert.is_nil(host:groups("dra.net", "10.140.65.248", "pci-0010-03-00-0"))
  end)

  it("recomputes only changed devices at cycle boundaries", function()
    assert.are.equal(0, host:cycle().devices_updated)
    g:apply([[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: extra-nic}
spec:
  driver: dra.net
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic-0
    attributes:
      dra.net/numaNode: {int: 3}
]])
    local c = host:cycle()
    assert.are.equal(1, c.devices_updated)
    assert.are.equal(3, g:device("dra.net", "n2", "nic-0").derived["resource.kubernetes.io/numaNode"])
    assert.are.equal(0, host:cycle().devices_updated)
  end)

  it("removes what it published when closed", function()
    host:close()
    local gpu = g:device("gpu.nvidia.com", "10.140.65.248", "gpu-2")
    assert.is_nil(next(gpu.derived or {}))
    host = core.policy_host(g, POL)
  end)
end)

describe("draengine allocate --policies", function()
  local function alloc(args)
    local rc, out, err = H.run(args)
    return rc, out, err
  end

  it("satisfies matchAttribute resource.kubernetes.io/numaNode across a GPU and a NIC whose drivers name NUMA differently", function()
    local base = { "allocate", "--node", "10.140.65.248", "-f", FIX .. "oci-gb200.yaml", "-f",
                   SPECFIX .. "gb200-numa-claim.yaml" }
    local rc, _, err = alloc(base)
    assert.are.equal(1, rc, err)
    assert.truthy(err:find("lack the attribute of a constraint (resource.kubernetes.io/numaNode)", 1, true), err)
    local args = { table.unpack(base) }
    args[#args + 1] = "--policies"
    args[#args + 1] = POL
    rc, out, err = alloc(args)
    assert.are.equal(0, rc, err)
    local doc = core.json_decode(out)
    local results = doc.items[1].status.allocation.devices.results
    local got = {}
    for _, r in ipairs(results) do got[r.request] = r.device end
    assert.are.equal("gpu-2", got.gpu)
    -- a NIC on NUMA 1 (domains 0010/0012)
    assert.truthy(got.nic == "pci-0010-03-00-0" or got.nic == "pci-0010-03-00-1" or got.nic:find("^pci%-0012"), got.nic)
  end)

  it("lets a DeviceClass select on a derived attribute", function()
    local base = { "allocate", "--node", "gpu-node-1", "-f", FIX .. "eks-h100x8.yaml", "-f",
                   SPECFIX .. "h100-gold-claim.yaml" }
    local rc = alloc(base)
    assert.are.equal(1, rc)
    local args = { table.unpack(base) }
    args[#args + 1] = "--policies"
    args[#args + 1] = POL
    local rc2, out, err = alloc(args)
    assert.are.equal(0, rc2, err)
    assert.are.equal(2, #core.json_decode(out).items[1].status.allocation.devices.results)
  end)

  it("keeps a whole GPU and its MIG devices apart (groups)", function()
    local claims = [[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nvidia-any}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: whole-and-mig, namespace: default}
spec:
  devices:
    requests:
    - name: whole
      exactly:
        deviceClassName: nvidia-any
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].uuid == 'GPU-8f2f7c1e-0a33-4b1f-9c55-1e0d2a4b6c01'"}
    - name: mig
      exactly:
        deviceClassName: nvidia-any
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'mig'"}
]]
    local f = H.write_temp(claims, ".yaml")
    local base = { "allocate", "--node", "aks-a100-1", "-f", FIX .. "aks-a100-mig.yaml", "-f", f }
    -- Kubernetes alone does not know they are the same GPU
    local rc, _, err = alloc(base)
    assert.are.equal(0, rc, err)
    local args = { table.unpack(base) }
    args[#args + 1] = "--policies"
    args[#args + 1] = POL
    rc, _, err = alloc(args)
    assert.are.equal(1, rc, err)
    os.remove(f)
  end)

  it("refuses a claim that an admit policy refuses, with the policy's reason", function()
    local d = P.dir({ ["quota.lua"] = [[
return {
  name = "quota", version = "1.0.0", api = 1, domains = {},
  admit = function(claim)
    if claim.namespace ~= "prod" then return false, "only prod may use GPUs" end
    return true
  end,
}]] })
    local rc, _, err = alloc({ "allocate", "--node", "gpu-node-1", "-f", FIX .. "eks-h100x8.yaml", "-f",
                               SPECFIX .. "h100-gold-claim.yaml", "--policies", d })
    assert.are.equal(1, rc)
    assert.truthy(err:find("only prod may use GPUs", 1, true), err)
    P.rm(d)
  end)

  it("gives the same results as without policies when the directory is empty", function()
    local d = P.dir({})
    local base = { "allocate", "--node", "10.140.65.248", "-f", FIX .. "oci-gb200.yaml", "-f",
                   SPECFIX .. "gb200-numa-claim.yaml", "-f", SPECFIX .. "plain-claims.yaml" }
    local rc1, out1 = alloc(base)
    local args = { table.unpack(base) }
    args[#args + 1] = "--policies"
    args[#args + 1] = d
    local rc2, out2 = alloc(args)
    assert.are.equal(rc1, rc2)
    assert.are.equal(out1, out2)
    P.rm(d)
  end)

  it("reports an invalid policy directory with file:line and exit 2", function()
    local d = P.dir({ ["bad.lua"] = "return {\n  name = 'bad',\n  version = 1,\n}\n" })
    local rc, _, err = alloc({ "allocate", "--node", "gpu-node-1", "-f", FIX .. "eks-h100x8.yaml", "--policies", d })
    assert.are.equal(2, rc)
    assert.truthy(err:find(d .. "/bad.lua:3:", 1, true), err)
    P.rm(d)
  end)
end)

describe("scores choose the node", function()
  it("prefers the fuller node with binpack (ties without policies go to name order)", function()
    local input = [[
apiVersion: v1
kind: Node
metadata: {name: a-node}
---
apiVersion: v1
kind: Node
metadata: {name: b-node}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: example}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: a}
spec:
  driver: gpu.example.com
  nodeName: a-node
  pool: {name: a-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}, {name: gpu-3}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: b}
spec:
  driver: gpu.example.com
  nodeName: b-node
  pool: {name: b-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: example}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default, uid: p-uid}
spec:
  containers: [{name: c, image: x}]
  resourceClaims: [{name: gpu, resourceClaimName: one}]
]]
    local f = H.write_temp(input, ".yaml")
    local rc, out, err = H.run({ "allocate", "-f", f, "-o", "table" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("a-node", 1, true), out)
    rc, out, err = H.run({ "allocate", "-f", f, "-o", "table", "--policies", POL })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("b-node", 1, true), out)
    assert.falsy(out:find("a-node", 1, true), out)
    os.remove(f)
  end)
end)
