-- cel_dispatch_spec.lua - calls resolved at compile time (overload, library,
-- cost rule, device field) behave as the run-time lookup did: overloads still
-- chosen by run-time types when several remain, costs unchanged, and the
-- code point counting behind size() and the cost rules exact for any UTF-8.
local core = require "draengine.core"

local function eval(e, opts) return core.cel_eval(e, nil, opts) end

-- deterministic UTF-8 strings mixing 1- to 4-byte characters
local CHARS = { "a", "Z", "0", "-", "\u{e9}", "\u{3c0}", "\u{20ac}", "\u{4e2d}", "\u{1f600}", "\u{10348}" }
local seed = 7
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 8) % n
end
local function str(len, ascii)
  local t = {}
  for i = 1, len do t[i] = ascii and CHARS[1 + rnd(4)] or CHARS[1 + rnd(#CHARS)] end
  return table.concat(t)
end

describe("CEL dispatch resolved at compile time", function()
  it("size() counts code points of strings of every length", function()
    for len = 0, 40 do
      for _, ascii in ipairs({ true, false }) do
        local s = str(len, ascii)
        assert.are.equal(utf8.len(s), eval("size(s)", { bindings = { s = s } }), s)
        assert.are.equal(utf8.len(s), eval("s.size()", { bindings = { s = s } }), s)
      end
    end
  end)

  it("string equality costs ceil(0.1 * the shorter string's code points)", function()
    for len = 8, 30 do
      local a, b = str(len), str(len + 3)
      local _, _, cost = eval("a == b", { bindings = { a = a, b = b }, cost = true })
      local m = math.min(utf8.len(a), utf8.len(b))
      local want = 2 + (m == 0 and 0 or (m <= 10 and 1 or math.ceil(m / 10)))
      assert.are.equal(want, cost, a .. " / " .. b)
    end
  end)

  it("chooses among several overloads by the run-time types", function()
    assert.are.equal(3, eval("dyn(1) + dyn(2)"))
    assert.are.equal("ab", eval("dyn('a') + dyn('b')"))
    assert.is_true(eval("dyn(quantity('2')).isGreaterThan(quantity('1'))"))
    assert.is_true(eval("dyn(semver('1.2.0')).isGreaterThan(semver('1.1.9'))"))
    assert.are.equal(-1, eval("dyn(semver('1.0.0')).compareTo(semver('2.0.0'))"))
    local ok, msg = pcall(eval, "dyn(1).isGreaterThan(dyn(2))")
    assert.is_false(ok)
    assert.matches("no such overload", msg)
    assert.are.equal(1.5, eval("double(dyn('1.5'))"))
  end)

  it("keeps the cost rules of each call (figures of the run-time lookup before)", function()
    local cases = {
      { "'abc'.startsWith('a')", 1 },
      { "'hello world, this is long'.contains('is long')", 3 },
      { "quantity('1Gi').compareTo(quantity('1Mi')) > 0", 4 },
      { "[1, 2, 3].exists(x, x == 2)", 16 },
      { "!('abcdefghijklmnop' == 'abcdefghijklmnoq')", 3 },
      { "dyn(1) + dyn(2) == 3", 2 },
      { "'a' + 'b' == 'ab'", 2 },
      { "[1,2] + [3] == [1,2,3]", 2 },
      { "semver('1.0.0') == semver('1.0.0')", 3 },
      { "quantity('1') == quantity('1')", 3 },
      { "'x' in ['a', 'b', 'x']", 0 },
      { "{'a': 1}['a'] == 1", 2 },
      { "'abc'.matches('^a.*')", 1 },
      { "'a,b,c'.split(',').join('-') == 'a-b-c'", 3 },
    }
    for _, c in ipairs(cases) do
      local v, _, cost = eval(c[1], { cost = true })
      assert.is_true(v, c[1])
      assert.are.equal(c[2], cost, c[1])
    end
  end)

  it("selects the device's fields and answers has() for them", function()
    local dev = { driver = "gpu.example.com", attributes = { ["gpu.example.com/model"] = { string = "h100" } },
                  allowMultipleAllocations = true }
    assert.is_true(core.cel_eval("device.driver == 'gpu.example.com'", dev))
    assert.is_true(core.cel_eval("has(device.attributes) && has(device.capacity) && has(device.driver)", dev))
    assert.is_true(core.cel_eval("device.allowMultipleAllocations", dev, { consumable_capacity = true }))
    assert.is_true(core.cel_eval("device.attributes['gpu.example.com'].model == 'h100'", dev))
  end)
end)
