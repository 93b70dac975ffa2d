-- model_inspect_spec.lua - `draengine inspect`: what it prints for the example
-- cluster, JSON output, errors and exit codes, determinism.
local core = require "draengine.core"
local H = require "support.helper"

local example = H.root .. "/examples/cluster"

describe("draengine inspect", function()
  it("summarises the example cluster per node", function()
    local rc, out, err = H.run({ "inspect", "-f", example })
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.truthy(out:find("^3 nodes, 6 pools, 6 slices, 32 devices, 4 classes, 3 claims %(2 allocated%), 1 taint rules\n"), out)
    -- node sections in name order, each with its pools sorted by driver
    local n1, n2, n3 = out:find("\nnode gpu%-node%-1 "), out:find("\nnode gpu%-node%-2 "), out:find("\nnode mi300x%-node%-1 ")
    assert.truthy(n1 and n2 and n3 and n1 < n2 and n2 < n3)
    assert.truthy(out:find("  pool dra.net/gpu-node-1  generation 1, 1/1 slices\n", 1, true))
    -- allocated devices name their claim, admin access is marked, rule taints shown
    -- attributes of the driver's own domain by name, others qualified: the standard
    -- resource.kubernetes.io/numaNode is not the NIC driver's numaNode
    assert.truthy(out:find("gpu-0   ml-team/trainer-0-gpu-efa-x7k2p  type=gpu productName=NVIDIA H100 80GB HBM3 " ..
      "resource.kubernetes.io/numaNode=0 resource.kubernetes.io/pcieRoot=pci0000:44", 1, true), out)
    assert.truthy(out:find("pci-0000-4e-00-0  ml-team/trainer-0-gpu-efa-x7k2p  pciDevice=Elastic Fabric Adapter (EFA) " ..
      "numaNode=0 resource.kubernetes.io/pcieRoot=pci0000:44", 1, true), out)
    assert.truthy(out:find("gpu-0   gpu-monitoring/dcgm-all-gpus(admin)", 1, true), out)
    assert.truthy(out:find("| taints: gpu.nvidia.com/xid=79:NoSchedule", 1, true), out)
    assert.truthy(out:find("memory=196592Mi", 1, true))
    -- the IMEX pool is listed as network-attached with its selector
    assert.truthy(out:find("network-attached pools (not node-local)\n  pool gpu.nvidia.com/imex-domain-0f884867-1", 1, true), out)
    assert.truthy(out:find("nodeSelector: nvidia.com/gpu.clique In [0f884867-ba2f-4294-9155-b495ff367eea.1]", 1, true))
    assert.truthy(out:find("  ml-team/two-gpus: 1 request, pending\n", 1, true))
  end)

  it("prints the same thing every time and for any file order", function()
    local _, a = H.run({ "inspect", "-f", example })
    local _, b = H.run({ "inspect", "-f", example })
    assert.are.equal(a, b)
    local files = {}
    for f in io.popen("ls " .. H.shell_quote(example)):lines() do table.insert(files, 1, example .. "/" .. f) end
    local args = { "inspect" }
    for _, f in ipairs(files) do args[#args + 1] = "-f"; args[#args + 1] = f end
    local rc, c = H.run(args)
    assert.are.equal(0, rc)
    assert.are.equal(a, c)
  end)

  it("writes JSON with -o json", function()
    local rc, out = H.run({ "inspect", "-f", example, "-o", "json" })
    assert.are.equal(0, rc)
    local j = core.json_decode(out)
    assert.are.equal(32, j.summary.devices)
    assert.are.equal(3, #j.nodes)
    assert.are.equal("gpu-node-1", j.nodes[1].name)
    local pool = j.nodes[1].pools[2]
    assert.are.equal("gpu.nvidia.com", pool.driver)
    local gpu0 = pool.devices[1]
    assert.are.equal("gpu-0", gpu0.name)
    assert.are.equal("allocated", gpu0.state)
    assert.are.equal("ml-team/trainer-0-gpu-efa-x7k2p", gpu0.allocatedTo[1].claim)
    assert.are.equal("NVIDIA H100 80GB HBM3", gpu0.attributes["gpu.nvidia.com/productName"])
    assert.are.equal("81559Mi", gpu0.capacity["gpu.nvidia.com/memory"])
    assert.are.equal(1, #j.networkPools)
    local names = {}
    for _, c in ipairs(j.classes) do names[#names + 1] = c.name end
    assert.are.same({ "efa.networking.k8s.aws", "gpu.amd.com", "gpu.nvidia.com", "imex.nvidia.com" }, names)
    assert.are.equal("nvidia.com/gpu", j.classes[3].extendedResourceName)
  end)

  it("reports every invalid object with exit 2 and prints nothing else", function()
    local bad = H.write_temp([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: ok}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s1}
spec: {driver: d.com, allNodes: true, pool: {name: p, resourceSliceCount: 1}, devices: [{name: x, attributes: {m: {}}}]}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: Bad}
]], ".yaml")
    local rc, out, err = H.run({ "inspect", "-f", bad })
    os.remove(bad)
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.truthy(err:find("draengine inspect: " .. bad .. ': document 2: ResourceSlice "s1": spec.devices[0].attributes["m"]: Invalid value', 1, true), err)
    assert.truthy(err:find("draengine inspect: " .. bad .. ': document 3: DeviceClass "Bad": metadata.name: Invalid value: "Bad"', 1, true), err)
  end)

  it("refuses bad usage", function()
    local rc, _, err = H.run({ "inspect" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("no manifests given: use -f PATH", 1, true))
    rc, _, err = H.run({ "inspect", "-f", example, "-o", "xml" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown output format "xml"', 1, true))
    rc, _, err = H.run({ "inspect", "-f", "/nonexistent/x.yaml" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("/nonexistent/x.yaml", 1, true), err)
    local out
    rc, out = H.run({ "inspect", "--help" })
    assert.are.equal(0, rc)
    assert.truthy(out:find("usage: draengine inspect -f PATH...", 1, true))
  end)
end)
