-- binpack and numa-score.
describe("binpack", function()
  local p = dra.test.policy("binpack.lua")
  local gpu = dra.test.device { driver = "gpu.example.com" }

  it("prefers the node left with fewer free devices", function()
    local full = p:score({ name = "a", devices = 8, free_devices = 1 }, { gpu })
    local empty = p:score({ name = "b", devices = 8, free_devices = 8 }, { gpu })
    assert.are.equal(1, full)
    assert.near(1 / 8, empty, 1e-9)
    assert.is_true(full > empty)
  end)

  it("scores nodes without devices 0", function()
    assert.are.equal(0, p:score({ name = "c", devices = 0, free_devices = 0 }, {}))
  end)
end)

describe("numa-score", function()
  local p = dra.test.policy("numa-score.lua")

  it("prefers a GPU and a NIC on the same NUMA node (GB200 tray)", function()
    local snap = dra.test.snapshot("spec/fixtures/oci-gb200.yaml")
    local bridge = dra.test.policy("numa-bridge.lua")
    local gpu0 -- NUMA 0 by PCI domain; give it the bridged attribute as the engine would publish it
    for _, d in ipairs(snap.devices) do
      if d.driver == "gpu.nvidia.com" and d.attributes["resource.kubernetes.io/pciBusID"] == "0008:06:00.0" then
        gpu0 = dra.test.device { driver = d.driver, pool = d.pool, name = d.name,
                                 attributes = bridge:derive(d) }
      end
    end
    local near = snap.device["dra.net/10.140.65.248/pci-0000-03-00-0"]
    local far = snap.device["dra.net/10.140.65.248/pci-0010-03-00-0"]
    local node = { name = "10.140.65.248", devices = 12, free_devices = 12 }
    -- a handle's score is what the engine adds: weight (10) x the hook's value
    assert.are.equal(10, p:score(node, { gpu0, near }))
    assert.are.equal(0, p:score(node, { gpu0, far }))
  end)

  it("is neutral when nothing says where the devices are", function()
    local a = dra.test.device { driver = "gpu.example.com" }
    assert.are.equal(5, p:score({ name = "n", devices = 1, free_devices = 1 }, { a }))
  end)
end)

describe("the shipped scores together", function()
  it("rank NUMA alignment before bin-packing (weights 10 and 1)", function()
    local set = dra.test.set()
    local a0 = dra.test.device { driver = "dra.net", name = "a0", attributes = { ["dra.net/numaNode"] = 0 } }
    local a1 = dra.test.device { driver = "dra.net", name = "a1", attributes = { ["dra.net/numaNode"] = 1 } }
    local b0 = dra.test.device { driver = "dra.net", name = "b0", attributes = { ["dra.net/numaNode"] = 0 } }
    -- aligned on an empty node beats split on an almost full node
    local aligned = set:score({ name = "empty", devices = 8, free_devices = 8 }, { a0, b0 })
    local split = set:score({ name = "full", devices = 8, free_devices = 2 }, { a0, a1 })
    assert.is_true(aligned > split)
  end)
end)
