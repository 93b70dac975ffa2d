-- mig-compat: a whole GPU and its partitions share a scope and never a group.
describe("mig-compat", function()
  local p = dra.test.policy("mig-compat.lua")

  it("puts a whole A100 and its MIG devices in one scope, different groups", function()
    local snap = dra.test.snapshot("spec/fixtures/aks-a100-mig.yaml")
    local whole = p:groups(snap.device["gpu.nvidia.com/aks-a100-1/gpu-0"])
    local mig1 = p:groups(snap.device["gpu.nvidia.com/aks-a100-1/gpu-0-mig-1g10gb-19-0"])
    local mig3 = p:groups(snap.device["gpu.nvidia.com/aks-a100-1/gpu-0-mig-3g40gb-9-4"])
    local other = p:groups(snap.device["gpu.nvidia.com/aks-a100-1/gpu-1"])
    assert.are.equal("GPU-8f2f7c1e-0a33-4b1f-9c55-1e0d2a4b6c01", whole.scope)
    assert.are.equal(whole.scope, mig1.scope)
    assert.are.equal(whole.scope, mig3.scope)
    assert.are_not.equal(whole.scope, other.scope)
    assert.are.same({ "whole" }, whole.groups)
    assert.are.same({ "partition" }, mig1.groups)
    assert.are.same({ "partition" }, mig3.groups)
  end)

  it("scopes AMD partitions by their parent", function()
    local snap = dra.test.snapshot("spec/fixtures/mi300x-dpx.yaml")
    local g = p:groups(snap.devices[1])
    assert.are.equal("amd-7066866330502360227", g.scope)
    assert.are.same({ "partition" }, g.groups)
    local whole = dra.test.snapshot("spec/fixtures/mi300x.yaml")
    assert.are.same({ "whole" }, p:groups(whole.devices[1]).groups)
  end)

  it("leaves NICs and devices without an identity alone", function()
    local snap = dra.test.snapshot("spec/fixtures/aws-p4d.yaml")
    for _, d in ipairs(snap.devices) do
      if d.driver ~= "gpu.nvidia.com" then assert.is_nil(p:groups(d)) end
    end
    assert.is_nil(p:groups(dra.test.device { driver = "gpu.nvidia.com", attributes = { type = "mig" } }))
  end)
end)
