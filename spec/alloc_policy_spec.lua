-- alloc_policy_spec.lua - allocate --policies: attributes the policy host
-- derives are seen by constraints exactly like published ones.
local H = require "support.helper"

describe("allocate --policies", function()
  local C = H.shared_dir() .. "/corpus/manifests/"
  local args = {"allocate", "--node", "10.140.65.248", "-o", "table",
    "-f", H.root .. "/spec/fixtures/alloc/claim-gpu-nic-same-numa.yaml",
    "-f", C .. "dranet/oci-gb200-resourceslice-gpu.yaml", "-f", C .. "dranet/oci-gb200-resourceslice-dranet.yaml",
    "-f", C .. "nvidia-gpu/deviceclasses-all.rendered.yaml", "-f", C .. "dranet/oci-deviceclass-dranet.net.yaml"}

  it("cannot match on resource.kubernetes.io/numaNode without the bridging policy", function()
    local rc, _, err = H.run(args)
    assert.are.equal(1, rc)
    assert.matches("4 lack the attribute of a constraint (resource.kubernetes.io/numaNode)", err, 1, true)
  end)

  it("matches GPU and NIC on the NUMA node numa-bridge derives", function()
    local a = {table.unpack(args)}
    a[#a + 1] = "--policies"
    a[#a + 1] = H.root .. "/policies"
    local rc, out, err = H.run(a)
    assert.are.equal(0, rc, err)
    assert.matches("gpu%s+10%.140%.65%.248%s+gpu%.nvidia%.com%s+10%.140%.65%.248%s+gpu%-0%s+type=gpu resource%.kubernetes%.io/numaNode=0", out)
    assert.matches("nic%s+10%.140%.65%.248%s+dra%.net%s+10%.140%.65%.248%s+pci%-0000%-03%-00%-0%s+resource%.kubernetes%.io/numaNode=0", out)
  end)
end)
