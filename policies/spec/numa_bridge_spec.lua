-- numa-bridge: resource.kubernetes.io/numaNode from vendor names, on real
-- ResourceSlices (fixtures/README.md says where each comes from).
local STD = "resource.kubernetes.io/numaNode"

describe("numa-bridge", function()
  local p = dra.test.policy("numa-bridge.lua")

  it("owns exactly one standard attribute", function()
    assert.are.same({ STD }, p.domains)
    assert.are.equal("numa-bridge", p.name)
  end)

  it("bridges dranet's dra.net/numaNode on real EFA NICs (AWS p4d)", function()
    local snap = dra.test.snapshot("spec/fixtures/aws-p4d.yaml")
    local bridged, nics = 0, 0
    for _, d in ipairs(snap.devices) do
      if d.driver == "dra.net" then
        nics = nics + 1
        local want = d.attributes["dra.net/numaNode"]
        local got = p:derive(d)
        if want ~= nil then
          assert.are.equal(want, got[STD], d.name)
          bridged = bridged + 1
        else
          assert.is_nil(got[STD], d.name)
        end
      end
    end
    assert.is_true(nics > 0)
    assert.is_true(bridged > 0)
  end)

  it("infers GB200 GPU NUMA nodes from the PCI domain, and bridges the NICs next to them", function()
    local snap = dra.test.snapshot("spec/fixtures/oci-gb200.yaml")
    local gpus = {}
    for _, d in ipairs(snap.devices) do
      if d.driver == "gpu.nvidia.com" then
        gpus[d.attributes["resource.kubernetes.io/pciBusID"]] = p:derive(d)[STD]
      end
    end
    -- the slice's own comment: 0008/0009 -> NUMA 0, 0018/0019 -> NUMA 1
    assert.are.equal(0, gpus["0008:06:00.0"])
    assert.are.equal(0, gpus["0009:06:00.0"])
    assert.are.equal(1, gpus["0018:06:00.0"])
    assert.are.equal(1, gpus["0019:06:00.0"])
    local nic = snap.device["dra.net/10.140.65.248/pci-0010-03-00-0"]
    assert.is_not_nil(nic)
    assert.are.equal(1, p:derive(nic)[STD])
  end)

  it("leaves devices alone that already publish the standard attribute (dra.cpu)", function()
    local snap = dra.test.snapshot("spec/fixtures/cpu-grouped.yaml")
    assert.is_true(#snap.devices > 0)
    for _, d in ipairs(snap.devices) do
      assert.is_not_nil(d.attributes[STD])
      assert.are.same({}, p:derive(d))
    end
  end)

  it("maps NVIDIA VFIO `numa` and AMD `numaNode`", function()
    local vfio = dra.test.device { driver = "gpu.nvidia.com", name = "gpu-vfio-0",
                                   attributes = { type = "vfio", numa = 1, productName = "NVIDIA H100 80GB HBM3" } }
    assert.are.same({ [STD] = 1 }, p:derive(vfio))
    local amd = dra.test.device { driver = "gpu.amd.com", attributes = { type = "amdgpu-partition", numaNode = 0 } }
    assert.are.same({ [STD] = 0 }, p:derive(amd))
  end)

  it("uses the physical node of a list value and ignores -1 (no affinity)", function()
    local nic = dra.test.device { driver = "dra.net", attributes = { ["dra.net/numaNode"] = -1 } }
    assert.are.same({}, p:derive(nic))
    local cpu = dra.test.device { driver = "dra.cpu", attributes = { ["dra.cpu/numaNodeID"] = 3 } }
    assert.are.same({ [STD] = 3 }, p:derive(cpu))
  end)

  it("derives nothing for H100s on EKS (no NUMA published, not a Grace tray)", function()
    local snap = dra.test.snapshot("spec/fixtures/eks-h100x8.yaml")
    for _, d in ipairs(snap.devices) do
      assert.are.same({}, p:derive(d))
    end
  end)
end)
