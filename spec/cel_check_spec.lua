-- cel_check_spec.lua - what the checker refuses at compile time, as the
-- Kubernetes environment does (docs/cel.md §4, §9; dra-model.md §3.3).
local core = require "draengine.core"

local function err(expr, opts)
  local r = core.cel_compile(expr, opts)
  assert.is_false(r.ok, expr .. " should not compile")
  return r.error
end

describe("CEL checker", function()
  it("refuses undeclared names", function()
    assert.truthy(err("x + 1"):find("undeclared reference to 'x'", 1, true))
    assert.truthy(err("nope(1)"):find("undeclared reference to 'nope'", 1, true))
  end)

  it("refuses mixed numeric arithmetic and reports the overload", function()
    assert.truthy(err("1 + 1u"):find("found no matching overload for '_+_' applied to '(int, uint)'", 1, true))
    assert.truthy(err("'a'.startsWith(1)"):find("applied to 'string.(int)'", 1, true))
    assert.truthy(err("isQuantity([1, 2, 3])"):find("found no matching overload for 'isQuantity'", 1, true))
  end)

  it("allows cross-type numeric comparison but not equality", function()
    assert.is_true(core.cel_compile("1 < 2u").ok)
    assert.is_true(core.cel_compile("1 < 2.0").ok)
    assert.is_false(core.cel_compile("1 == 1u").ok)
    assert.is_true(core.cel_compile("dyn(1) == 1u").ok)
  end)

  it("refuses heterogeneous list and map literals", function()
    assert.truthy(err("[1, 'a']"):find("expected type 'int' but found 'string'", 1, true))
    assert.truthy(err("{'k': 1, 2: 'v'}"):find("expected type", 1, true))
    assert.truthy(err("[1, null]"):find("expected type 'int' but found 'null_type'", 1, true))
    assert.is_true(core.cel_compile("[[], [1]]").ok)
  end)

  it("types logical operators and conditions", function()
    assert.truthy(err("'a' && true"):find("expected type 'bool' but found 'string'", 1, true))
    assert.is_false(core.cel_compile("1 ? 2 : 3").ok)
    assert.is_false(core.cel_compile("true ? 1 : 'a'").ok)
  end)

  it("refuses comprehensions over non-iterables", function()
    assert.truthy(err("1.exists(x, true)"):find("cannot be range of a comprehension", 1, true))
  end)

  it("knows the fields of device", function()
    local sel = {selector = true}
    assert.is_true(core.cel_compile("device.driver == 'x'", sel).ok)
    assert.truthy(err("device.name == 'x'", sel):find("undefined field 'name'", 1, true))
    assert.truthy(err("device == 1", sel):find("no matching overload", 1, true))
  end)

  it("requires a bool or dyn result for a selector", function()
    local sel = {selector = true}
    assert.truthy(err("1", sel):find("must evaluate to bool or the unknown type, not int", 1, true))
    assert.truthy(err("device.driver", sel):find("not string", 1, true))
    assert.is_true(core.cel_compile("device.attributes['d'].x", sel).ok)
  end)

  it("gates fields and includes() in NewExpressions, not in StoredExpressions", function()
    local new_off = {selector = true, new_expressions = true, consumable_capacity = false,
                     list_attributes = false}
    assert.truthy(err("device.allowMultipleAllocations", new_off):find("undefined field 'allowMultipleAllocations'", 1, true))
    assert.truthy(err("device.attributes['d'].x.includes(1)", new_off):find("undeclared reference to 'includes'", 1, true))
    assert.truthy(err("device.attributes['d'].x.exists(i, i == 1)", new_off):find("range of a comprehension", 1, true))
    local stored_off = {selector = true, consumable_capacity = false, list_attributes = false}
    assert.is_true(core.cel_compile("device.allowMultipleAllocations", stored_off).ok)
    assert.is_true(core.cel_compile("device.attributes['d'].x.includes(1)", stored_off).ok)
    local new_on = {selector = true, new_expressions = true, consumable_capacity = true,
                    list_attributes = true}
    assert.is_true(core.cel_compile("device.allowMultipleAllocations && device.attributes['d'].x.exists(i, i == 1)", new_on).ok)
  end)

  it("validates constant regular expressions at compile time", function()
    assert.truthy(err("'a'.matches('(')"):find("missing closing )", 1, true))
    local bound = "cel.bind(p, '(', 'a'.matches(p))" -- not a constant: a runtime error
    assert.is_true(core.cel_compile(bound).ok)
    assert.has_error(function() core.cel_eval(bound) end)
  end)

  it("computes constant conversions at compile time, as cel-go OptOptimize", function()
    assert.truthy(err("int('abc')"):find("program instantiation failed", 1, true))
    assert.truthy(err("uint(-1)"):find("unsigned integer overflow", 1, true))
  end)

  it("says clearly when a Kubernetes function is outside the subset", function()
    assert.truthy(err("[1, 2].isSorted()"):find("not supported by draengine", 1, true))
    assert.truthy(err("sets.contains([1], [1])"):find("not supported by draengine", 1, true))
  end)

  it("estimates the worst-case cost like the API server", function()
    local sel = {selector = true}
    assert.are.equal(4, core.cel_compile('device.attributes["dra.example.com"].name', sel).cost)
    assert.are.equal(389, core.cel_compile('device.attributes["dra.example.com"].names.exists(x, x > 0)', sel).cost)
    assert.are.equal(52, core.cel_compile('device.attributes["dra.example.com"].name.includes("fish")', sel).cost)
    local nested = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    local e = "true"
    for i = 1, 7 do e = nested .. ".all(x" .. i .. ", " .. e .. ")" end
    assert.is_true(core.cel_compile(e, sel).cost > 1000000)
  end)

  it("caches compile results by text", function()
    local a = core.cel_compile("1 + 1")
    local b = core.cel_compile("1 + 1")
    assert.are.same(a, b)
  end)
end)
