-- cel_regex_spec.lua - matches(), find(), findAll(): RE2 syntax on PCRE2,
-- with RE2's refusals and no catastrophic backtracking.
local core = require "draengine.core"

local function eval(e) return core.cel_eval(e) end
local function refused(pattern)
  local r = core.cel_compile("'x'.matches('" .. pattern .. "')")
  assert.is_false(r.ok, pattern .. " should be refused")
  return r.error
end

describe("CEL regular expressions", function()
  it("match anywhere unless anchored", function()
    assert.is_true(eval("'hubba'.matches('ubb')"))
    assert.is_false(eval("'hubba'.matches('^ubb')"))
    assert.is_true(eval("matches('banana', 'ba(na)*')"))
    assert.is_true(eval("'ma\\u00f1ana'.matches('a+\\u00f1+a+')"))
    assert.is_false(eval("'a\\nb'.matches('a$')")) -- $ is end of text without (?m)
    assert.is_true(eval("'a\\nb'.matches('(?m)a$')"))
    assert.is_true(eval("'AbC'.matches('(?i)abc')"))
  end)

  it("refuses what RE2 does not support", function()
    assert.truthy(refused("(a)\\\\1"):find("invalid escape sequence", 1, true))
    assert.truthy(refused("a(?=b)"):find("invalid or unsupported Perl syntax", 1, true))
    assert.truthy(refused("a(?<!b)"):find("invalid", 1, true))
    assert.truthy(refused("(?>a)"):find("invalid or unsupported Perl syntax", 1, true))
    assert.truthy(refused("a*+"):find("invalid nested repetition operator", 1, true))
    assert.truthy(refused("a{1001}"):find("invalid repeat count", 1, true))
    assert.truthy(refused("\\\\C"):find("invalid escape sequence", 1, true))
    assert.truthy(refused("(?R)"):find("invalid or unsupported Perl syntax", 1, true))
    assert.truthy(refused("*a"):find("missing argument to repetition operator", 1, true))
  end)

  it("refuses nested repeat counts whose product passes 1000, as RE2 and Go do", function()
    -- the error names the outer operator (with its lazy '?')
    assert.truthy(refused("(a{1,1000}){20}"):find("invalid repeat count: `{20}`", 1, true))
    assert.truthy(refused("(a{10}){101}?"):find("invalid repeat count: `{101}?`", 1, true))
    assert.truthy(refused("((a{10}){10}){11}"):find("invalid repeat count: `{11}`", 1, true))
    assert.truthy(refused("(a{10,}){101}"):find("invalid repeat count", 1, true))      -- open: its minimum
    assert.truthy(refused("(a{100}|b{20}){20}"):find("invalid repeat count", 1, true)) -- any branch
    assert.truthy(refused("(?:a{10}b){101}"):find("invalid repeat count", 1, true))
    -- at the limit, or where the product does not grow, the pattern compiles
    for _, ok in ipairs({"(a{2}){500}", "((a{10}){10}){10}", "(a{10}|b{100}){10}", "(a*){1000}",
                         "(a{0,1}){1000}", "((a{1000}){0}){2}", "x{2}(a{1000})", "(a{1,1000}){1}"}) do
      local r = core.cel_compile("'x'.matches('" .. ok .. "')")
      assert.is_true(r.ok, ok .. ": " .. tostring(r.error))
    end
    assert.is_true(eval("'aaaa'.matches('^(a{2}){2}$')"))
  end)

  it("accepts RE2 syntax that PCRE spells differently", function()
    assert.is_true(eval("'x{'.matches('x{')"))            -- a literal brace
    assert.is_true(eval("'\\x0b'.matches('\\\\v')"))         -- \v is the character, not a class
    assert.is_false(eval("'\\x0b'.matches('\\\\s')"))        -- RE2's \s excludes \v
    assert.is_true(eval("'\\n'.matches('\\\\012')"))          -- octal escape
    assert.is_true(eval("'ab'.matches('(?P<x>a)b')"))
    assert.is_true(eval("'a9'.matches('[[:alpha:]][[:digit:]]')"))
  end)

  it("finds the leftmost-first match", function()
    assert.are.equal("a", eval("'ab ab'.find('a|ab')"))
    assert.are.equal("", eval("'xyz'.find('[0-9]+')"))
    assert.are.same({"1", "22", "333"}, eval("'a1b22c333'.findAll('[0-9]+')"))
    assert.are.same({"1", "22"}, eval("'a1b22c333'.findAll('[0-9]+', 2)"))
    assert.are.same({"", "", "", ""}, eval("'abc'.findAll('x*')"))
  end)

  it("bounds backtracking: a hostile pattern gets RE2's answer, not a hang", function()
    -- PCRE2 hits its limits; the linear-time fallback answers (cel_regex_fallback_spec)
    local s = string.rep("a", 5000) .. "!"
    assert.is_false(core.cel_eval("s.matches('^(a+)+$')", nil, {bindings = {s = s}}))
    assert.are.equal("", core.cel_eval("s.find('(a|aa)+$')", nil, {bindings = {s = s}}))
    -- long but benign inputs still match
    assert.is_true(core.cel_eval("s.matches('^a+!$')", nil, {bindings = {s = s}}))
  end)

  it("reports an invalid pattern given at runtime", function()
    assert.has_error(function() core.cel_eval("p.matches(p)", nil, {bindings = {p = "("}}) end)
  end)
end)
