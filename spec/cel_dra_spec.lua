-- cel_dra_spec.lua - the DRA environment: the device variable, domains,
-- missing keys, list attributes, includes(), quantities and versions
-- (docs/cel.md §9-10, dra-model.md §3).
local core = require "draengine.core"

local gpu = {
  driver = "gpu.example.com",
  attributes = {
    model = {string = "LATEST-GPU-MODEL"},
    index = {int = 3},
    healthy = {bool = true},
    driverVersion = {version = "550.54.15"},
    ["resource.kubernetes.io/pciBusID"] = {string = "0000:3b:00.0"},
    ids = {ints = {1, 2, 3}},
    names = {strings = {"fish", "bird"}},
  },
  capacity = {memory = {value = "80Gi"}, ["other.example.com/slots"] = {value = "4"}},
}

local function sel(expr, dev, opts) return core.cel_eval(expr, dev or gpu, opts) end
local function fails(expr, dev)
  local ok, msg = pcall(core.cel_eval, expr, dev or gpu)
  assert.is_false(ok, expr .. " should fail")
  return msg
end

describe("DRA device selectors", function()
  it("reads the driver and attributes of the driver's domain", function()
    assert.is_true(sel("device.driver == 'gpu.example.com'"))
    assert.is_true(sel("device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"))
    assert.is_true(sel("device.attributes['gpu.example.com']['index'] == 3"))
    assert.is_true(sel("device.attributes['gpu.example.com'].healthy"))
    assert.is_true(sel("device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:3b')"))
  end)

  it("treats an unknown domain as an empty map", function()
    assert.is_false(sel("'nope.example.com' in device.attributes"))
    assert.is_true(sel("'gpu.example.com' in device.attributes"))
    assert.is_true(sel("size(device.attributes['nope.example.com']) == 0"))
    assert.is_false(sel("has(device.attributes['nope.example.com'].x)"))
    assert.is_true(sel("device.attributes.size() == 2"))
  end)

  it("fails on a missing attribute with 'no such key'", function()
    assert.truthy(fails("device.attributes['gpu.example.com'].nope == 1"):find("no such key: nope", 1, true))
    assert.truthy(fails("device.attributes['dra.net/rdma'].bool == true"):find("no such key: bool", 1, true))
    assert.is_false(sel("has(device.attributes['gpu.example.com'].nope) && device.attributes['gpu.example.com'].nope"))
  end)

  it("compares dyn attributes at runtime", function()
    assert.is_false(sel("device.attributes['gpu.example.com'].model == 1"))
    assert.truthy(fails("device.attributes['gpu.example.com'].model > 1"):find("no such overload", 1, true))
    assert.truthy(fails("device.attributes['gpu.example.com'].index.exists(x, x > 0)")
      :find("got 'types.Int', expected iterable type", 1, true))
  end)

  it("exposes list attributes as lists", function()
    assert.is_true(sel("device.attributes['gpu.example.com'].ids.exists(x, x == 2)"))
    assert.is_true(sel("2 in device.attributes['gpu.example.com'].ids"))
    assert.is_true(sel("device.attributes['gpu.example.com'].names.size() == 2"))
    assert.truthy(fails("device.attributes['gpu.example.com'].names")
      :find("CEL result of type list could not be converted to bool", 1, true))
  end)

  it("implements includes() for scalars and lists, up to 48 values", function()
    assert.is_true(sel("device.attributes['gpu.example.com'].names.includes('bird')"))
    assert.is_true(sel("device.attributes['gpu.example.com'].index.includes(3)"))
    assert.is_false(sel("device.attributes['gpu.example.com'].index.includes(4)"))
    local long = {}
    for i = 0, 48 do long[#long + 1] = "value-" .. i end
    local dev = {driver = "d", attributes = {name = {strings = long}}}
    assert.is_true(sel("device.attributes['d'].name.includes('value-5')", dev))
    assert.truthy(fails("device.attributes['d'].name.includes('value-48')", dev)
      :find("'includes' function cannot be applied to lists longer than 48 values", 1, true))
  end)

  it("compares capacities as quantities", function()
    assert.is_true(sel("device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"))
    assert.is_true(sel("device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('80G'))"))
    assert.is_true(sel("device.capacity['other.example.com'].slots == quantity('4')"))
    assert.truthy(fails("device.capacity['gpu.example.com'].memory == dyn(5)"):find("no such overload", 1, true))
    assert.is_true(sel("!('x' in device.capacity['gpu.example.com']) || device.capacity['gpu.example.com'].x.isLessThan(quantity('1'))"))
  end)

  it("turns versions into semvers and fails every selector on a bad one", function()
    assert.is_true(sel("device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('535.0.0'))"))
    assert.is_true(sel("device.attributes['gpu.example.com'].driverVersion.major() == 550"))
    local bad = {driver = "d", attributes = {v = {version = "1.0"}, ok = {bool = true}}}
    assert.truthy(fails("device.attributes['d'].ok", bad):find("parse semantic version", 1, true))
    local none = {driver = "d", attributes = {v = {}}}
    assert.truthy(fails("true", none):find("unsupported attribute value", 1, true))
  end)

  it("reads allowMultipleAllocations, unset as false", function()
    assert.is_false(sel("device.allowMultipleAllocations"))
    assert.is_true(sel("device.allowMultipleAllocations", {driver = "d", allowMultipleAllocations = true}))
  end)

  it("supports cel.bind over a domain", function()
    assert.is_true(sel("cel.bind(g, device.attributes['gpu.example.com'], g.healthy && g.index == 3)"))
  end)

  it("files bare names under the driver given with the device", function()
    local dev = {attributes = {model = {string = "x"}}}
    assert.is_true(core.cel_eval("device.attributes['other.io'].model == 'x'", dev, {driver = "other.io"}))
  end)

  it("materialises device maps as plain values", function()
    local v = core.cel_eval("device.capacity", gpu, {value = true})
    assert.are.equal("80Gi", v["gpu.example.com"].memory)
    local doms = core.cel_eval("device.attributes.map(d, d)", gpu, {value = true})
    table.sort(doms)
    assert.are.same({"gpu.example.com", "resource.kubernetes.io"}, doms)
  end)
end)

describe("Kubernetes quantity and semver libraries", function()
  local function eval(e) return core.cel_eval(e) end
  it("parses, compares and does arithmetic exactly", function()
    assert.is_true(eval("quantity('200M') == quantity('0.2G')"))
    assert.is_true(eval("quantity('50M').isLessThan(quantity('50Mi'))"))
    assert.are.equal(-49980, eval("quantity('50k').add(20).sub(quantity('100k')).asInteger()"))
    assert.are.equal(50703.0, eval("quantity('50.703k').asApproximateFloat()"))
    assert.are.equal(-1, eval("sign(quantity('-1m'))"))
    assert.is_false(eval("isQuantity('10Mm')"))
    assert.has_error(function() eval("quantity('10Mo')") end)
    assert.has_error(function() eval("quantity('9999999999999999999999999999999999999G').asInteger()") end,
      "cannot convert value to integer")
  end)

  it("parses semvers strictly, or normalised with true", function()
    assert.are.equal("1.2.3", eval("semver('1.2.3')"))
    assert.has_error(function() eval("semver('v1.0')") end)
    assert.is_true(eval("semver('v01.01', true) == semver('1.1.0')"))
    assert.is_true(eval("isSemver('1.1', true) && !isSemver('1.1')"))
    assert.are.equal(-1, eval("semver('1.0.0-alpha').compareTo(semver('1.0.0'))"))
    assert.is_true(eval("semver('1.0.0+a') == semver('1.0.0+b')"))
  end)
end)

describe("derived attribute expressions (KEP-6080)", function()
  local dev = {driver = "v.com", attributes = {topology = {string = "socket0-numa1"},
    memory_gb = {int = 96}, v = {version = "1.2.3"}}}
  it("convert scalars and lists to attribute values", function()
    assert.are.same({kind = "string", value = "socket0"},
      core.cel_eval_attr("device.attributes['v.com'].topology.split('-')[0]", dev))
    assert.are.same({kind = "string", value = "tier-1"},
      core.cel_eval_attr("device.attributes['v.com'].memory_gb >= 80 ? 'tier-1' : 'tier-2'", dev))
    assert.are.same({kind = "int", value = 96}, core.cel_eval_attr("device.attributes['v.com'].memory_gb", dev))
    assert.are.same({kind = "version", value = "1.2.3"}, core.cel_eval_attr("device.attributes['v.com'].v", dev))
    assert.are.same({kind = "ints", value = {1, 2}}, core.cel_eval_attr("[1, 2]", dev))
    assert.are.same({kind = "strings", value = {}}, core.cel_eval_attr("dyn([])", dev))
  end)
  it("refuses other result types", function()
    assert.has_error(function() core.cel_eval_attr("1.5", dev) end)
    assert.has_error(function() core.cel_eval_attr("{'a': 1}", dev) end)
  end)
end)
