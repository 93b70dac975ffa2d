-- policy_trip_spec.lua - in a revision's first pass over the devices, a
-- hook that exceeds its budget on 3 calls in a row is not called again
-- (engine/policy/trip.c): the revision is refused as before, its further
-- calls are listed as "not run" instead of each spending the budget.  A
-- success between two budget failures, or an ordinary error, trips nothing.
-- The fixture's 12 devices come in slice order gpu-0..3, then 8 NICs whose
-- names end in 0 and 1 by turns.
local H = require "support.helper"
local P = require "fixtures.policy.helper"

local FIX = H.root .. "/policies/spec/fixtures/oci-gb200.yaml"
local NODE = "10.140.65.248"

local dirs = {}
teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

local function refused(body)
  local d = P.dir({ ["p.lua"] = 'return {name = "p", version = "1.0.0", api = 1, domains = {"x.example.com"},\n' ..
    '  derive = function(device)\n' .. body .. '\n  end}\n' })
  dirs[#dirs + 1] = d
  local rc, _, err = H.run({ "allocate", "-f", FIX, "--policies", d })
  assert.are.equal(2, rc, err)
  return d, err
end

local BUDGET = "instructions: instruction budget exceeded (limit 1000000 instructions)"
local NOT_RUN = "instructions: not run: the hook failed so on its last 3 calls"

describe("a hook over its budget on every device of a revision's first pass", function()
  it("runs 3 times; the other calls fail at once, listed apart", function()
    local d, err = refused("    while true do end")
    assert.truthy(err:find("fails on 12 current devices (12 failed calls)", 1, true), err)
    assert.truthy(err:find("  policy p, hook derive, " .. d .. "/p.lua:3: " .. BUDGET .. "\n" ..
      "    on 3 devices: gpu.nvidia.com/" .. NODE .. "/gpu-0, gpu.nvidia.com/" .. NODE .. "/gpu-1, " ..
      "gpu.nvidia.com/" .. NODE .. "/gpu-2\n", 1, true), err)
    assert.truthy(err:find("  policy p, hook derive, " .. d .. "/p.lua:3: " .. NOT_RUN .. "\n    on 9 devices: ", 1, true), err)
    -- the first failure named in the summary is a real one
    assert.truthy(err:find("(first: policy p, " .. d .. "/p.lua:3, derive instructions: instruction budget exceeded", 1, true), err)
  end)

  it("is called on every device when it succeeds between its failures", function()
    local d, err = refused('    if device.name:match("[02468]$") then while true do end end\n    return {}')
    assert.truthy(err:find("fails on 6 current devices (6 failed calls)", 1, true), err)
    assert.truthy(err:find("  policy p, hook derive, " .. d .. "/p.lua:3: " .. BUDGET .. "\n    on 6 devices: ", 1, true), err)
    assert.falsy(err:find("not run", 1, true), err)
  end)

  it("is called on every device when it fails with an ordinary error", function()
    local d, err = refused('    error("no")')
    assert.truthy(err:find("  policy p, hook derive, " .. d .. "/p.lua:3: error: no\n    on 12 devices: ", 1, true), err)
    assert.falsy(err:find("not run", 1, true), err)
  end)
end)
