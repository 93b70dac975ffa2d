-- cli_spec.lua - the command surface: version, help, unknown commands.
local H = require "support.helper"

describe("draengine command", function()
  it("prints its version", function()
    local rc, out = H.run({ "version" })
    assert.are.equal(0, rc)
    assert.truthy(out:match("^draengine %d+%.%d+%.%d+"))
  end)

  it("lists every subcommand in help", function()
    local rc, out = H.run({ "help" })
    assert.are.equal(0, rc)
    for _, c in ipairs({ "inspect", "allocate", "cel", "run", "sim", "serve", "policy", "bench" }) do
      assert.truthy(out:find("\n  " .. c .. " ", 1, true), c)
    end
  end)

  it("answers --help on every subcommand with exit 0", function()
    for _, c in ipairs({ "inspect", "allocate", "cel", "run", "sim", "sysfs", "serve", "policy",
                         "bench", "version", "help" }) do
      local rc, out = H.run({ c, "--help" })
      assert.are.equal(0, rc, c)
      assert.truthy(out:find("usage: draengine " .. c, 1, true), c .. ": " .. out)
    end
  end)

  it("refuses an unknown command with exit 2", function()
    local rc, _, err = H.run({ "frobnicate" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown command "frobnicate"', 1, true))
  end)

  it("refuses an unknown benchmark by name", function()
    local rc, _, err = H.run({ "bench", "no-such-bench" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown benchmark "no-such-bench"', 1, true))
  end)
end)

describe("feature gates", function()
  local core = require "draengine.core"
  it("have the 1.37 defaults", function()
    local g = core.gates()
    assert.is_true(g.DRAPrioritizedList)
    assert.is_true(g.DRAConsumableCapacity)
    assert.is_true(g.DRADeviceBindingConditions)
    assert.is_false(g.DRAListTypeAttributes)
    assert.is_false(g.DRADerivedAttributes)
  end)
  it("are overridden by name", function()
    local g = core.gates("DRAListTypeAttributes=true, DRAAdminAccess=false")
    assert.is_true(g.DRAListTypeAttributes)
    assert.is_false(g.DRAAdminAccess)
  end)
  it("refuse unknown names and bad values", function()
    assert.has_error(function() core.gates("NoSuchGate=true") end, "unrecognized feature gate: NoSuchGate")
    assert.has_error(function() core.gates("DRAAdminAccess=maybe") end)
  end)
end)
