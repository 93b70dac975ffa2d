-- cel_cli_spec.lua - `draengine cel` for people and `draengine cel --batch`
-- for the conformance harness.
local H = require "support.helper"

describe("draengine cel", function()
  it("prints the value of a plain expression", function()
    local rc, out = H.run({ "cel", "[1, 2, 3].map(x, x * 2)" })
    assert.are.equal(0, rc)
    assert.are.equal("[2, 4, 6]\n", out)
    rc, out = H.run({ "cel", "{'a': 1u, 'b': 2u}" })
    assert.are.equal('{"a": 1u, "b": 2u}\n', out)
    rc, out = H.run({ "cel", [=[[b'\x01', bytes('\u00ff')]]=] })
    assert.are.equal('[b"\\x01", b"\\xc3\\xbf"]\n', out)
  end)

  it("shows a compile error with a caret and exits 2", function()
    local rc, _, err = H.run({ "cel", "1 + 'a'" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("found no matching overload for '_+_'", 1, true))
    assert.truthy(err:find(" | 1 + 'a'\n | ..^", 1, true))
  end)

  it("exits 1 on a runtime error", function()
    local rc, _, err = H.run({ "cel", "1 / 0" })
    assert.are.equal(1, rc)
    assert.truthy(err:find("division by zero", 1, true))
  end)

  it("evaluates a selector against a device file (YAML, ResourceSlice entry form)", function()
    local f = H.write_temp([[
name: gpu-0
attributes:
  productName: {string: "NVIDIA A100-SXM4-80GB"}
  driverVersion: {version: "550.54.15"}
capacity:
  memory: {value: 80Gi}
]], ".yaml")
    local rc, out = H.run({ "cel", "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$') && " ..
      "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
      "--device", f, "--driver", "gpu.nvidia.com" })
    assert.are.equal(0, rc)
    assert.are.equal("true\n", out)
    rc, out = H.run({ "cel", "device.attributes['gpu.nvidia.com'].driverVersion", "--device", f,
      "--driver", "gpu.nvidia.com", "--value" })
    assert.are.equal('semver("550.54.15")\n', out)
    os.remove(f)
  end)

  it("refuses unknown flags", function()
    local rc, _, err = H.run({ "cel", "1", "--nope" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("unknown flag \"--nope\"", 1, true))
    -- a single-dash flag is a flag too; an expression starting with - goes after --
    rc, _, err = H.run({ "cel", "-x" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("unknown shorthand flag", 1, true), err)
    local out
    rc, out = H.run({ "cel", "--", "-1 < 0" })
    assert.are.equal(0, rc)
    assert.are.equal("true\n", out)
  end)

  it("answers JSON lines in --batch, uint64 beyond 2^63 included", function()
    local input = table.concat({
      [[{"expr": "x + 1u", "bindings": {"x": {"uint": 18446744073709551614}}}]],
      [[{"expr": "device.attributes[\"d\"].n == 1", "device": {"driver": "d", "attributes": {"n": {"int": 1}}}}]],
      [[{"expr": "1 +", "device": {"driver": "d"}}]],
      [[{"expr": "1 / 0"}]],
      [[{"expr": "device.allowMultipleAllocations", "device": {"driver": "d"}, "features": {"ConsumableCapacity": false}, "envType": "NewExpressions"}]],
      [[not json]],
    }, "\n") .. "\n"
    local rc, out = H.run({ "cel", "--batch" }, input)
    assert.are.equal(0, rc)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(6, #lines)
    assert.are.equal('{"value":{"uint":18446744073709551615}}', lines[1])
    assert.are.equal('{"bool":true}', lines[2])
    assert.truthy(lines[3]:find('"phase":"compile"', 1, true))
    assert.truthy(lines[3]:find("Syntax error", 1, true))
    assert.truthy(lines[4]:find('"phase":"runtime"', 1, true))
    assert.truthy(lines[5]:find("undefined field 'allowMultipleAllocations'", 1, true))
    assert.truthy(lines[6]:find('"error"', 1, true))
  end)
end)
