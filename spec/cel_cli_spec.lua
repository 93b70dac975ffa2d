-- cel_cli_spec.lua - `draengine cel` for people and `draengine cel --batch`
-- for the conformance harness.
local H = require "support.helper"

-- the answer lines of `draengine cel --batch` to the given input lines
local function batch(input)
  local rc, out = H.run({ "cel", "--batch" }, table.concat(input, "\n") .. "\n")
  assert.are.equal(0, rc)
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  assert.are.equal(#input, #lines, out)
  return lines
end

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

  it("refuses a device file with a field it would ignore, naming the file and the path, and takes every Device field", function()
    local cases = {
      { "name: g\ncapacty: {m: {value: 1}}\n", 'device: unknown field "capacty"' },
      { "name: g\nattributes: {cnt: {in: 1}}\n", 'attributes.cnt: unknown field "in"' },
      { "name: g\nattributes: {cnt: {int: 1, string: x}}\n", "attributes.cnt: must have one of int, bool" },
      { "name: g\ncapacity: {m: {vaule: 1}}\n", 'device.capacity.m: unknown field "vaule"' },
    }
    for _, case in ipairs(cases) do
      local f = H.write_temp(case[1], ".yaml")
      local rc, _, err = H.run({ "cel", "true", "--device", f, "--driver", "d" })
      os.remove(f)
      assert.are.equal(2, rc, err)
      assert.truthy(err:find(f .. ": " .. case[2], 1, true), err)
    end
    local f = H.write_temp(table.concat({ "name: g", "attributes: {cnt: {int: 1}}", "capacity: {m: {value: 1}}",
      "consumesCounters: []", "nodeName: n1", "taints: []", "bindsToNode: false", "bindingConditions: []",
      "bindingFailureConditions: []", "allowMultipleAllocations: false", "" }, "\n"), ".yaml")
    local rc, out, err = H.run({ "cel", "device.attributes['d'].cnt == 1", "--device", f, "--driver", "d" })
    os.remove(f)
    assert.are.equal(0, rc, err)
    assert.are.equal("true\n", out)
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
    local lines = batch({
      [[{"expr": "x + 1u", "bindings": {"x": {"uint": 18446744073709551614}}}]],
      [[{"expr": "device.attributes[\"d\"].n == 1", "device": {"driver": "d", "attributes": {"n": {"int": 1}}}}]],
      [[{"expr": "1 +", "device": {"driver": "d"}}]],
      [[{"expr": "1 / 0"}]],
      [[{"expr": "device.allowMultipleAllocations", "device": {"driver": "d"}, "features": {"ConsumableCapacity": false}, "envType": "NewExpressions"}]],
      [[not json]],
    })
    assert.are.equal('{"value":{"uint":18446744073709551615}}', lines[1])
    assert.are.equal('{"bool":true}', lines[2])
    assert.truthy(lines[3]:find('"phase":"compile"', 1, true))
    assert.truthy(lines[3]:find("Syntax error", 1, true))
    assert.truthy(lines[4]:find('"phase":"runtime"', 1, true))
    assert.truthy(lines[5]:find("undefined field 'allowMultipleAllocations'", 1, true))
    assert.truthy(lines[6]:find('"error"', 1, true))
  end)

  it("refuses a --batch line whose features or envType it would otherwise ignore, and goes on", function()
    local lines = batch({
      [[{"expr": "1 + 1", "features": {"ListTypeAtributes": true}}]],
      [[{"expr": "1 + 1", "features": {"ConsumableCapacity": "yes"}}]],
      [[{"expr": "1 + 1", "features": ["ConsumableCapacity"]}]],
      [[{"expr": "1 + 1", "envType": "NewExpression"}]],
      [[{"expr": "1 + 1", "envType": true}]],
      [[{"expr": "1 + 1", "features": {"ConsumableCapacity": true, "ListTypeAttributes": false}, "envType": "StoredExpressions"}]],
    })
    assert.truthy(lines[1]:find('unknown feature \\"ListTypeAtributes\\"', 1, true), lines[1])
    assert.truthy(lines[2]:find('\\"features.ConsumableCapacity\\" must be a bool', 1, true), lines[2])
    assert.truthy(lines[3]:find('\\"features\\" must be an object', 1, true), lines[3])
    for i = 4, 5 do
      assert.truthy(lines[i]:find('\\"envType\\" must be \\"NewExpressions\\" or \\"StoredExpressions\\"', 1, true), lines[i])
    end
    for i = 1, 5 do assert.truthy(lines[i]:find('"phase":"compile"', 1, true), lines[i]) end
    assert.are.equal('{"value":{"int":2}}', lines[6])
  end)
end)
