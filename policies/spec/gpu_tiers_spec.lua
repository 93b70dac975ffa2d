-- gpu-tiers: classes from product names, architecture and memory.
local D = "tier.draengine.io/"

describe("gpu-tiers", function()
  local p = dra.test.policy("gpu-tiers.lua")

  local function tier(d) return p:derive(d) end

  it("puts live H100 80GB HBM3 (81559Mi) in h100-class / gold", function()
    local snap = dra.test.snapshot("spec/fixtures/eks-h100x8.yaml")
    local n = 0
    for _, d in ipairs(snap.devices) do
      if d.driver == "gpu.nvidia.com" then
        local t = tier(d)
        assert.are.same({ [D .. "class"] = "h100-class", [D .. "tier"] = "gold", [D .. "rank"] = 3,
                          [D .. "memoryGiB"] = 79 }, t)
        n = n + 1
      end
    end
    assert.are.equal(16, n)
  end)

  it("puts A100-SXM4-40GB in a100-class and GB200 in h200-class", function()
    local p4d = dra.test.snapshot("spec/fixtures/aws-p4d.yaml")
    for _, d in ipairs(p4d.devices) do
      if d.driver == "gpu.nvidia.com" then
        assert.are.equal("a100-class", tier(d)[D .. "class"])
        assert.are.equal(40, tier(d)[D .. "memoryGiB"])
      else
        assert.are.same({}, tier(d)) -- NICs are not GPUs: the drivers filter skips them
      end
    end
    local gb = dra.test.snapshot("spec/fixtures/oci-gb200.yaml")
    local seen = 0
    for _, d in ipairs(gb.devices) do
      if d.driver == "gpu.nvidia.com" then
        assert.are.equal("platinum", tier(d)[D .. "tier"])
        assert.are.equal(185, tier(d)[D .. "memoryGiB"])
        seen = seen + 1
      end
    end
    assert.are.equal(4, seen)
  end)

  it("tiers a whole MI300X but not its DPX partitions", function()
    local whole = dra.test.snapshot("spec/fixtures/mi300x.yaml")
    assert.are.equal("h200-class", tier(whole.devices[1])[D .. "class"])
    local dpx = dra.test.snapshot("spec/fixtures/mi300x-dpx.yaml")
    assert.are.same({}, tier(dpx.devices[1]))
  end)

  it("skips MIG devices and tiers their parent", function()
    local snap = dra.test.snapshot("spec/fixtures/aks-a100-mig.yaml")
    for _, d in ipairs(snap.devices) do
      if d.attributes.type == "mig" then
        assert.are.same({}, tier(d))
      else
        assert.are.equal("a100-class", tier(d)[D .. "class"])
        assert.are.equal(80, tier(d)[D .. "memoryGiB"])
      end
    end
  end)

  it("falls back to architecture, then memory", function()
    local hopper = dra.test.device { driver = "gpu.nvidia.com", attributes = { productName = "NVIDIA X", architecture = "Hopper" },
                                     capacity = { memory = "141Gi" } }
    assert.are.equal("h200-class", tier(hopper)[D .. "class"])
    local blackwell = dra.test.device { driver = "gpu.nvidia.com", attributes = { architecture = "Blackwell" } }
    assert.are.same({ [D .. "class"] = "h200-class", [D .. "tier"] = "platinum", [D .. "rank"] = 4 }, tier(blackwell))
    local small = dra.test.device { driver = "gpu.intel.com", attributes = { model = "Battlemage" }, capacity = { memory = "24480Mi" } }
    assert.are.equal("l4-class", tier(small)[D .. "class"])
    local l4 = dra.test.device { driver = "gpu.nvidia.com", attributes = { productName = "NVIDIA L4" } }
    assert.are.equal("bronze", tier(l4)[D .. "tier"])
    local l40s = dra.test.device { driver = "gpu.nvidia.com", attributes = { productName = "NVIDIA L40S" } }
    assert.are.equal("silver", tier(l40s)[D .. "tier"])
  end)

  it("tiers Gaudi2 (no capacity published) by model", function()
    local snap = dra.test.snapshot("spec/fixtures/gaudi2.yaml")
    assert.is_true(#snap.devices > 0)
    for _, d in ipairs(snap.devices) do
      assert.are.same({ [D .. "class"] = "a100-class", [D .. "tier"] = "silver", [D .. "rank"] = 2 }, tier(d))
    end
  end)

  it("derives nothing for an integrated GPU with memory 0 and an unknown model", function()
    local igpu = dra.test.device { driver = "gpu.intel.com", attributes = { model = "Raptor Lake-S" }, capacity = { memory = "0" } }
    assert.are.same({}, tier(igpu))
  end)
end)
