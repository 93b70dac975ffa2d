-- alloc_policy_groups_spec.lua - policy compatibility groups in the
-- allocator: a device whose groups hook failed closed is never allocated
-- (its compatibility is unknown); failing open leaves it unconstrained.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

local function groups_policy(failure)
  return string.format([[
return {
  name = "flaky-groups", version = "1.0.0", api = 1, domains = {},%s
  groups = function(device)
    if device.name == "gpu-0" then error("cannot tell this one apart") end
    return { scope = "board", groups = { "any" } }
  end,
}
]], failure and string.format("\n  failure = %q,", failure) or "")
end

local function objects(g)
  g:apply({ apiVersion = "v1", kind = "Node", metadata = { name = "node-1" } })
  g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu" },
            spec = { selectors = { { cel = { expression = 'device.driver == "gpu.example.com"' } } } } })
  g:apply({ apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "node-1-gpus" },
            spec = { driver = "gpu.example.com", nodeName = "node-1",
                     pool = { name = "node-1", generation = 1, resourceSliceCount = 1 },
                     devices = { { name = "gpu-0" }, { name = "gpu-1" } } } })
  for _, c in ipairs({ { "one", 1 }, { "two", 2 } }) do
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
              metadata = { name = c[1], namespace = "default" },
              spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = "gpu", count = c[2] } } } } } })
  end
end

describe("policy groups that fail", function()
  local dir, g, host, a
  after_each(function()
    if a then a:close() end
    if host then host:close() end
    a, host, g = nil, nil, nil
    P.rm(dir)
  end)

  local function setup(failure)
    dir = P.dir({ ["groups.lua"] = groups_policy(failure) })
    g = core.graph()
    objects(g)
    host = core.policy_host(g, dir)
    a = core.allocator(g, { policies = host })
  end

  local function device_of(r) return r.claims[1].allocation.devices.results[1].device end

  it("closed: the device is never allocated", function()
    setup(nil)
    local r = a:allocate("node-1", { { name = "one" } })
    assert.are.equal("allocated", r.status)
    assert.are.equal("gpu-1", device_of(r))
    r = a:allocate("node-1", { { name = "two" } })
    assert.are.equal("unsatisfiable", r.status)
    assert.matches("1 blocked (a compatibility groups policy failed on them)", r.reason, 1, true)
    -- through the scheduler too
    g:apply({ apiVersion = "v1", kind = "Pod", metadata = { name = "p", namespace = "default", uid = "u-p" },
              spec = { containers = { { name = "c", image = "x" } },
                       resourceClaims = { { name = "gpu", resourceClaimName = "one" } } } })
    local s = a:schedule("default", "p")
    assert.are.equal("scheduled", s.status)
    assert.are.equal("gpu-1", s.claims[1].allocation.devices.results[1].device)
  end)

  it("open: the device is allocated without a group constraint", function()
    setup("open")
    local r = a:allocate("node-1", { { name = "one" } })
    assert.are.equal("gpu-0", device_of(r))
    assert.are.equal("allocated", a:allocate("node-1", { { name = "two" } }).status)
  end)
end)
