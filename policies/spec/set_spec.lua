-- The shipped directory as one set: ownership, and the facts published for
-- a mixed GPU + NIC node.
describe("the shipped policy set", function()
  it("loads with disjoint ownership", function()
    local set = dra.test.set()
    assert.are.equal(5, set.count)
  end)

  it("gives a GB200 GPU and the NICs on its NUMA node the same resource.kubernetes.io/numaNode", function()
    local set = dra.test.set()
    local snap = dra.test.snapshot("spec/fixtures/oci-gb200.yaml")
    local numa = {}
    for _, d in ipairs(snap.devices) do
      local facts = set:derive(d)
      numa[d.name] = facts["resource.kubernetes.io/numaNode"]
      if d.driver == "gpu.nvidia.com" then
        assert.are.equal("h200-class", facts["tier.draengine.io/class"])
      end
    end
    assert.are.equal(numa["gpu-0"], numa["pci-0000-03-00-0"])
    assert.are_not.equal(numa["gpu-0"], numa["pci-0010-03-00-0"])
  end)
end)
