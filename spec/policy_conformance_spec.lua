-- policy_conformance_spec.lua - Policies add to Kubernetes' model, they do
-- not silently change it: on every allocator conformance vector, `allocate`
-- gives byte-for-byte the same output and exit code with an empty policy
-- directory and with the shipped policies as without --policies (the
-- vectors' devices carry no vendor NUMA names, no GPU products and no MIG
-- parents, and --node leaves no node to score) - except for the one thing
-- policies add on purpose: the annotation naming the policy revision that
-- decided (draengine.dev/policy-revision), which is taken out before the
-- bytes are compared.
local H = require "support.helper"
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

local GATES = {
  AdminAccess = "DRAAdminAccess", PrioritizedList = "DRAPrioritizedList",
  PartitionableDevices = "DRAPartitionableDevices", DeviceTaints = "DRADeviceTaints",
  ConsumableCapacity = "DRAConsumableCapacity", DeviceBinding = "DRADeviceBindingConditions",
  DeviceStatus = "DRAResourceClaimDeviceStatus", ExtendedResource = "DRAExtendedResource",
  ListTypeAttributes = "DRAListTypeAttributes", DerivedAttributes = "DRADerivedAttributes",
  CompatibilityGroups = "DRADeviceCompatibilityGroups",
}

local function vectors()
  local shared = H.shared_dir()
  if not shared then return {} end
  local dir = shared .. "/conformance/alloc"
  local list = {}
  local p = io.popen("ls " .. P.q(dir))
  for f in p:lines() do
    if f:match("%.json$") then list[#list + 1] = dir .. "/" .. f end
  end
  p:close()
  table.sort(list)
  return list
end

-- Remove the revision annotation exactly as `allocate` adds it to the
-- indented JSON: a whole "annotations" object when the claim had none, else
-- the last key of its annotations.  Returns the text and how many went.
local function strip_revision(s)
  local n1, n2
  s, n1 = s:gsub(',\n%s*"annotations": {\n%s*"draengine%.dev/policy%-revision": "%x+"\n%s*}', "")
  s, n2 = s:gsub(',\n%s*"draengine%.dev/policy%-revision": "%x+"', "")
  return s, n1 + n2
end

describe("the allocator conformance vectors with policies", function()
  local files = vectors()
  local empty = P.dir({})
  teardown(function() P.rm(empty) end)

  it("are all found", function()
    assert.is_true(#files >= 100, "conformance vectors: " .. #files)
  end)

  it("give the same bytes with no, empty and shipped policy directories", function()
    local differ = {}
    local annotated = 0
    for _, f in ipairs(files) do
      local v = core.json_decode(H.read_file(f))
      local items = { v.node }
      for _, key in ipairs({ "classes", "slices", "allocated", "taintRules", "claims" }) do
        for _, o in ipairs(v[key] or {}) do items[#items + 1] = o end
      end
      local input = H.write_temp(core.json_encode({ apiVersion = "v1", kind = "List", items = items }), ".json")
      local gates = {}
      for k, on in pairs(v.features or {}) do
        if GATES[k] then gates[#gates + 1] = GATES[k] .. "=" .. tostring(on) end
      end
      table.sort(gates)
      local args = { "allocate", "--node", v.node.metadata.name, "-f", input, "-o", "json" }
      if #gates > 0 then args[#args + 1] = "--feature-gates=" .. table.concat(gates, ",") end
      local rc0, out0 = H.run(args)
      local allocated = 0
      if rc0 == 0 then
        for _, item in ipairs(core.json_decode(out0).items) do
          if item.status and item.status.allocation then allocated = allocated + 1 end
        end
      end
      for _, dir in ipairs({ empty, H.root .. "/policies" }) do
        local a = { table.unpack(args) }
        a[#a + 1] = "--policies"
        a[#a + 1] = dir
        local rc, out = H.run(a)
        local stripped, n = strip_revision(out)
        annotated = annotated + n
        if rc ~= rc0 or stripped ~= out0 or n ~= allocated then differ[#differ + 1] = f .. " with " .. dir end
      end
      os.remove(input)
    end
    assert.are.same({}, differ)
    assert.is_true(annotated > 100, "annotated claims: " .. annotated)
  end)
end)
