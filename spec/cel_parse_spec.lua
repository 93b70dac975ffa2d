-- cel_parse_spec.lua - CEL lexical structure and grammar (docs/cel.md §2-3)
-- through core.cel_eval / core.cel_compile.
local core = require "draengine.core"

local function eval(e, ...) return core.cel_eval(e, ...) end
local function typed(e) return core.cel_eval_json(e) end

describe("CEL literals", function()
  it("parses ints, hex, uints and the minimum int", function()
    assert.are.equal('{"int":-9223372036854775808}', typed("-9223372036854775808"))
    assert.are.equal('{"int":255}', typed("0xFF"))
    assert.are.equal('{"uint":255}', typed("0xFFu"))
    assert.are.equal('{"uint":18446744073709551615}', typed("18446744073709551615u"))
    assert.are.equal('{"int":-1431655765}', typed("-0x55555555"))
  end)

  it("refuses out-of-range literals", function()
    local r = core.cel_compile("9223372036854775808")
    assert.is_false(r.ok)
    assert.truthy(r.error:find("invalid int literal", 1, true))
    assert.is_false(core.cel_compile("18446744073709551616u").ok)
    assert.is_false(core.cel_compile("1e999").ok)
  end)

  it("parses doubles, and 1. is not a double", function()
    assert.are.equal('{"double":0.5}', typed(".5"))
    assert.are.equal('{"double":-23.0}', typed("-2.3e+1"))
    assert.are.equal('{"double":-0.0}', typed("-0.0"))
    assert.is_false(core.cel_compile("2.").ok)
  end)

  it("decodes string escapes as code points and bytes escapes as octets", function()
    assert.are.equal("\xc3\xbf", eval([["\377"]]))
    assert.are.equal('{"bytes":"/w=="}', typed([[b"\377"]]))
    assert.are.equal('{"bytes":"w78="}', typed("b'\xc3\xbf'"))
    assert.are.equal("\a\b\f\n\r\t\v\"'\\?`", eval([['\a\b\f\n\r\t\v\"\'\\\?\`']]))
    assert.are.equal("\xf0\x9f\x98\xac", eval([["\U0001F62C"]]))
    assert.are.equal("J", eval([['\x4a']]))
  end)

  it("keeps raw strings raw and supports triple quotes across lines", function()
    assert.are.equal([[\n\x00]], eval([[r'\n\x00']]))
    assert.are.equal("a'b\nc", eval("'''a'b\nc'''"))
    assert.are.equal("x\ny", eval("'''x\r\ny'''")) -- CR LF normalised to LF
  end)

  it("refuses bad escapes and surrogates", function()
    assert.is_false(core.cel_compile([['\q']]).ok)
    assert.is_false(core.cel_compile([['\uD83D']]).ok)
    assert.is_false(core.cel_compile([[b'\u0041']]).ok)
    assert.is_false(core.cel_compile([['\400']]).ok)
  end)

  it("refuses an unterminated or multi-line single-quoted string", function()
    assert.is_false(core.cel_compile("'abc").ok)
    assert.is_false(core.cel_compile("'a\nb'").ok)
  end)
end)

describe("CEL grammar", function()
  it("applies precedence and left associativity", function()
    assert.are.equal(7, eval("1 + 2 * 3"))
    assert.are.equal(1, eval("10 - 5 - 4"))
    assert.are.equal(4, eval("4 * 4 / 4 * 4 / 4"))
    assert.is_true(eval("1 < 2 == true"))
    assert.are.equal(1, eval("true ? 1 : false ? 2 : 3"))
    assert.is_true(eval("!!true"))
    assert.are.equal(5, eval("--5"))
  end)

  it("allows reserved words only after a dot", function()
    assert.are.equal(1, eval("{'if': 1}.if"))
    local r = core.cel_compile("if")
    assert.is_false(r.ok)
    assert.truthy(r.error:find("reserved identifier: if", 1, true))
  end)

  it("handles long chains and deep nesting", function()
    local terms = {}
    for i = 1, 300 do terms[#terms + 1] = "false" end
    terms[#terms + 1] = "true"
    assert.is_true(eval(table.concat(terms, " || ")))
    assert.are.equal(7, eval(string.rep("(", 100) .. "7" .. string.rep(")", 100)))
  end)

  it("refuses nesting beyond the recursion limit without crashing", function()
    local r = core.cel_compile(string.rep("[", 300) .. string.rep("]", 300))
    assert.is_false(r.ok)
    assert.truthy(r.error:find("recursion limit", 1, true))
  end)

  it("reports syntax errors with line, column and a caret", function()
    local r = core.cel_compile("1 +\n  * 2")
    assert.is_false(r.ok)
    assert.are.equal(2, r.line)
    assert.are.equal(3, r.col)
    assert.truthy(r.error:find("Syntax error", 1, true))
    assert.are.equal(" |   * 2\n | ..^", r.caret)
  end)

  it("ignores comments", function()
    assert.are.equal(3, eval("1 + // one\n 2"))
  end)

  it("recognises macros by shape only", function()
    assert.is_true(eval("[1, 2].exists(x, x == 2)"))
    local r = core.cel_compile("[1].all(1)") -- one argument: not the macro
    assert.is_false(r.ok)
    assert.truthy(r.error:find("undeclared reference to 'all'", 1, true))
    r = core.cel_compile("[1].all(1, true)")
    assert.truthy(r.error:find("argument must be a simple name", 1, true))
    r = core.cel_compile("has(x)")
    assert.truthy(r.error:find("invalid argument to has() macro", 1, true))
  end)

  it("refuses optional syntax and message construction (tier C)", function()
    assert.truthy(core.cel_compile("{'a': 1}.?a").error:find("not supported", 1, true))
    assert.truthy(core.cel_compile("Msg{a: 1}").error:find("not supported", 1, true))
  end)
end)
