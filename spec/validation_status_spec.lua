-- validation_status_spec.lua - what the API server checks and draengine now
-- checks too: status.devices[].networkData of a claim, adminAccess in a
-- namespace without the admin label (a warning by default, refused with
-- --validate strict), and the claims draengine generates carrying exactly
-- the ownerReference fields upstream sets.
local H = require "support.helper"
local core = require "draengine.core"

local F = H.root .. "/spec/fixtures/alloc/"
local NODES = F .. "three-nodes.yaml"

local function run(text, ...)
  local f = H.write_temp(text, ".yaml")
  local args = { ... }
  for i, a in ipairs(args) do if a == "FILE" then args[i] = f end end
  local rc, out, err = H.run(args)
  os.remove(f)
  return rc, out, err
end

local function nic_claim(network)
  return [[
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: nic, namespace: default}
spec:
  devices:
    requests:
    - name: nic
      exactly: {deviceClassName: nic}
status:
  allocation:
    devices:
      results:
      - {request: nic, driver: dra.net, pool: n1, device: eth1}
  devices:
  - driver: dra.net
    pool: n1
    device: eth1
    networkData:
]] .. network
end

describe("status.devices[].networkData", function()
  it("accepts interface addresses in canonical CIDR form", function()
    local rc, _, err = run(nic_claim([[
      interfaceName: eth1
      hardwareAddress: "aa:bb:cc:dd:ee:ff"
      ips: ["10.9.8.7/24", "2001:db8::1/64", "::/0", "1.2.3.4/32", "2001:db8::1:0:0:1/64", "fe80::/10"]
]]), "inspect", "-f", "FILE")
    assert.are.equal(0, rc, err)
  end)

  it("refuses what the API server refuses, with its words", function()
    local ips = {}
    for i = 1, 17 do ips[#ips + 1] = string.format('"10.0.0.%d/24"', i) end
    local rc, out, err = run(nic_claim("      ips: [" .. table.concat(ips, ", ") .. "]\n"), "inspect", "-f", "FILE")
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.matches('status.devices[0].networkData.ips: Too many: 17: must have at most 16 items', err, 1, true)
    rc, _, err = run(nic_claim([[
      interfaceName: "]] .. string.rep("e", 257) .. [["
      hardwareAddress: "]] .. string.rep("a", 129) .. [["
      ips: ["10.9.8.7", "010.1.2.3/24", "2001:DB8::1/64", "2001:db8:0:0:1:0:0:1/64", "::ffff:1.2.3.4/120",
            "1.2.3.4/33", "fe80::1%eth0/64"]
]]), "inspect", "-f", "FILE")
    assert.are.equal(2, rc)
    local want = {
      "status.devices[0].networkData.interfaceName: Too long: may not be more than 256 bytes",
      "status.devices[0].networkData.hardwareAddress: Too long: may not be more than 128 bytes",
      'networkData.ips[0]: Invalid value: "10.9.8.7": must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)',
      'networkData.ips[1]: Invalid value: "010.1.2.3/24": must be in canonical form ("10.1.2.3/24")',
      'networkData.ips[2]: Invalid value: "2001:DB8::1/64": must be in canonical form ("2001:db8::1/64")',
      'networkData.ips[3]: Invalid value: "2001:db8:0:0:1:0:0:1/64": must be in canonical form ("2001:db8::1:0:0:1/64")',
      'networkData.ips[4]: Invalid value: "::ffff:1.2.3.4/120": must be in canonical form ("1.2.3.4/24")',
      'networkData.ips[5]: Invalid value: "1.2.3.4/33": must be a valid address in CIDR form',
      'networkData.ips[6]: Invalid value: "fe80::1%eth0/64": must be a valid address in CIDR form',
    }
    for _, w in ipairs(want) do assert.matches(w, err, 1, true) end
    rc, _, err = run(nic_claim('      ips: ["10.9.8.7/24", "2001:db8::1/64", "10.9.8.7/24"]\n'), "inspect", "-f", "FILE")
    assert.are.equal(2, rc)
    assert.matches('networkData.ips[2]: Duplicate value: "10.9.8.7/24"', err, 1, true)
    -- unknown fields are errors, like every other field
    rc, _, err = run(nic_claim("      ipAddresses: [\"10.9.8.7/24\"]\n"), "inspect", "-f", "FILE")
    assert.are.equal(2, rc)
    assert.matches('networkData: unknown field "ipAddresses"', err, 1, true)
  end)
end)

describe("adminAccess and the namespace label", function()
  local function with_ns(labels)
    return [[
apiVersion: v1
kind: Namespace
metadata:
  name: ops
]] .. (labels and ("  labels: {" .. labels .. "}\n") or "") .. [[
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: monitor, namespace: ops}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, adminAccess: true}
]]
  end
  local MSG = 'ResourceClaim "ops/monitor": spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices ' ..
    'requires the `resource.kubernetes.io/admin-access: "true"` label on the containing namespace'

  it("is a warning by default and allocates", function()
    local rc, out, err = run(with_ns(nil), "allocate", "--node", "node-a", "-f", NODES, "-f", "FILE", "-o", "table")
    assert.are.equal(0, rc, err)
    assert.matches("warning: ", err, 1, true)
    assert.matches(MSG, err, 1, true)
    assert.matches("ops/monitor", out, 1, true)
  end)

  it("is refused with --validate strict", function()
    local rc, out, err = run(with_ns(nil), "allocate", "--validate", "strict", "--node", "node-a", "-f", NODES, "-f", "FILE")
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.matches(MSG, err, 1, true)
  end)

  it("is fine in a labeled namespace", function()
    local text = with_ns('resource.kubernetes.io/admin-access: "true"')
    local rc, _, err = run(text, "allocate", "--node", "node-a", "-f", NODES, "-f", "FILE")
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    rc, _, err = run(text, "allocate", "--validate", "strict", "--node", "node-a", "-f", NODES, "-f", "FILE")
    assert.are.equal(0, rc, err)
  end)
end)

describe("generated claims", function()
  it("carry exactly the ownerReference and generateName the claim controller sets", function()
    local text = [[
apiVersion: v1
kind: Pod
metadata: {name: a-pod-with-a-rather-long-name-for-truncation, namespace: default, uid: 0d6f5c4e-1111-4222-8333-944445555666}
spec:
  containers: [{name: c, image: x}]
  resourceClaims:
  - {name: gpu-claim-with-a-long-name, resourceClaimTemplateName: one-gpu}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
]]
    local rc, out, err = run(text, "allocate", "-f", NODES, "-f", "FILE", "-o", "json")
    assert.are.equal(0, rc, err)
    local claim
    for _, item in ipairs(core.json_decode(out).items) do
      if item.kind == "ResourceClaim" then claim = item end
    end
    assert.is_table(claim, out)
    assert.are.same({ { apiVersion = "v1", kind = "Pod", name = "a-pod-with-a-rather-long-name-for-truncation",
      uid = "0d6f5c4e-1111-4222-8333-944445555666", controller = true } }, claim.metadata.ownerReferences)
    -- 44 + 26 + 2 = 72 > 57: both parts cut in proportion (34 and 20 characters), no trailing '-'
    assert.are.equal("a-pod-with-a-rather-long-name-for--gpu-claim-with-a-lon", claim.metadata.generateName)
    assert.are.equal(claim.metadata.generateName, claim.metadata.name:sub(1, #claim.metadata.generateName))
    assert.are.equal(#claim.metadata.generateName + 5, #claim.metadata.name)
    assert.are.equal("gpu-claim-with-a-long-name", claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"])
  end)
end)
