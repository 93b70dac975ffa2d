describe("gpu-tier", function()
  local p = dra.test.policy("gpu-tier.lua")
  local function gpu(memory)
    return dra.test.device { driver = "gpu.example.com", capacity = { memory = memory } }
  end

  it("is gold from 80 GiB", function()
    assert.are.same({ ["tier.example.com/tier"] = "gold" }, p:derive(gpu("80Gi")))
    assert.are.same({ ["tier.example.com/tier"] = "gold" }, p:derive(gpu("141Gi")))
  end)

  it("is silver below", function()
    assert.are.equal("silver", p:derive(gpu("24Gi"))["tier.example.com/tier"])
  end)

  it("leaves devices without memory alone", function()
    assert.are.same({}, p:derive(dra.test.device { driver = "gpu.example.com" }))
  end)
end)
