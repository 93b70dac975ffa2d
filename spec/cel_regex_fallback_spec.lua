-- cel_regex_fallback_spec.lua - the linear-time matcher behind matches(),
-- find() and findAll() (engine/cel/re_*.c) that answers when PCRE2 hits its
-- match limits: RE2's results on hostile patterns, leftmost-first
-- boundaries, and agreement with PCRE2 wherever PCRE2 and RE2 agree.
--
-- core.cel_regex(p, s, {engine = "pcre2"|"nfa"}) runs one engine alone;
-- core.cel_regex_knob(true) makes every match of this process take the
-- fallback path, cel_eval included, and returns how many matches the
-- fallback has answered so far.
local core = require "draengine.core"

local function eval(e, bindings) return core.cel_eval(e, nil, bindings and {bindings = bindings}) end

-- eval with every match forced through the fallback
local function eval_forced(e, bindings)
  core.cel_regex_knob(true)
  local ok, v = pcall(eval, e, bindings)
  core.cel_regex_knob(false)
  if not ok then error(v, 0) end
  return v
end

local function fallbacks() return core.cel_regex_knob(false) end

-- findAll as lib_k8s.c (and Go's FindAllStringIndex) drives a search:
-- after an empty match advance one code point; skip an empty match right
-- after the previous match.  Returns "s,e;s,e" or nil when the engine gave up.
local function find_all(p, s, engine)
  local out, pos, prev = {}, 0, -1
  while pos <= #s do
    local ok, ms, me = pcall(core.cel_regex, p, s, {engine = engine, start = pos})
    if not ok then return nil, ms end
    if not ms then break end
    local accept = true
    if me == ms then
      if ms == prev then accept = false end
      local w = 1
      while ms + w < #s and (s:byte(ms + w + 1) & 0xC0) == 0x80 do w = w + 1 end
      pos = ms + w
      if ms >= #s then pos = #s + 1 end
    else
      pos = me
    end
    prev = me
    if accept then out[#out + 1] = ms .. "," .. me end
  end
  return table.concat(out, ";")
end

-- One engine's full answer for (p, s): matches, find, findAll; nil if it gave up.
local function answer(p, s, engine)
  local ok, m = pcall(core.cel_regex, p, s, {engine = engine, first = true})
  if not ok then return nil end
  local fs, fe = core.cel_regex(p, s, {engine = engine})
  local all = find_all(p, s, engine)
  if not all then return nil end
  return string.format("%s %s %s", m and "1" or "0", fs and (fs .. "," .. fe) or "-", all)
end

-- Deterministic pattern generator (a 31-bit LCG).  Repeated groups are never
-- nullable and subjects carry no U+017F/U+212A: those are the two places where
-- PCRE2 and RE2 legitimately differ (empty iterations of nested loops, case
-- folding of \w and negated classes), checked separately below.
local function generator(seed)
  local x = seed
  local function rnd(n)
    x = (x * 1103515245 + 12345) % 2147483648
    return (x >> 8) % n + 1
  end
  local function pick(t) return t[rnd(#t)] end
  local CHARS = { "a", "b", "c", ".", "\\w", "\\W", "\\s", "\\d", "[ab]", "[^a]", "[a-c]",
    "[[:alpha:]]", "[^[:space:]]", "é", "k", "[k-m]", "[^k]", "\\pL", "[\\d-]", "-", " ",
    "\\n", "\\x{e9}", "\\x61", "\\141", "[é-ë]", "\\p{Latin}", "[^\\pL]", "(?i:k)", "(?i:é)" }
  local ASSERTS = { "^", "$", "\\A", "\\z", "\\b", "\\B", "(?m:^)", "(?m:$)" }
  local ANY_REP = { "", "", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,2}", "{2,}",
    "{1,2}?", "{0}" }
  local FLAGS = { "", "", "", "", "(?i)", "(?m)", "(?s)", "(?U)", "(?-i)", "(?ms)" }
  local gen, names = nil, 0
  -- a non-nullable item: a character, or a group of non-nullable branches
  local function solid(d)
    if d > 2 or rnd(10) <= 6 then return pick(CHARS) end
    local alts = {}
    for i = 1, rnd(3) do alts[i] = gen(d + 1, true) end
    names = names + 1
    return pick({ "(", "(?:", "(?P<g" .. names .. ">" }) .. table.concat(alts, "|") .. ")"
  end
  -- a sequence; when must_consume, its first item consumes a character
  gen = function(d, must_consume)
    local parts = { pick(FLAGS) }
    local first = solid(d)
    local rep = pick(ANY_REP)
    if must_consume and (rep == "" or not rep:match("^[%*%?]") and not rep:match("^{0")) then
      parts[#parts + 1] = first .. rep
    elseif must_consume then
      parts[#parts + 1] = first
    else
      parts[#parts + 1] = first .. rep
    end
    for _ = 1, rnd(3) - 1 do
      if rnd(6) == 1 then parts[#parts + 1] = pick(ASSERTS)
      else parts[#parts + 1] = solid(d) .. pick(ANY_REP) end
    end
    return table.concat(parts)
  end
  local ALPHABET = { "a", "b", "c", " ", "-", "\n", "é", "k", "K", "1", "_", "A", "ë", "β" }
  return function()
    local p = gen(0, false)
    local s = {}
    for i = 1, rnd(12) - 1 do s[i] = pick(ALPHABET) end
    return p, table.concat(s)
  end
end

describe("CEL regex fallback matcher", function()
  it("answers the realistic patterns PCRE2 gives up on, as RE2 does", function()
    local before = fallbacks()
    assert.is_false(eval("s.matches('^(\\\\w+\\\\s?)+$')", { s = "NVIDIA A100 SXM4 80GB PCIe Gen4 x16!" }))
    assert.is_false(eval("s.matches('^([a-zA-Z0-9]+-?)+$')", { s = "gpu-node-0001-aaaaaaaaaaaaaaaaaaaa_" }))
    assert.is_false(eval("s.matches('(a+)+$')", { s = string.rep("a", 20) .. "!" }))
    assert.is_true(eval("s.matches('(a|aa)*$')", { s = string.rep("a", 40) .. "!" }))
    assert.are.equal("", eval("s.find('(a+)+$')", { s = string.rep("a", 30) .. "!" }))
    assert.are.same({ "" }, eval("s.findAll('(a|aa)*$')", { s = string.rep("a", 30) .. "!" }))
    -- these went through the real trigger: PCRE2 hit its limit, the fallback answered
    assert.is_true(fallbacks() - before >= 6)
  end)

  it("finishes hostile patterns on long subjects with RE2's answer", function()
    local a = string.rep("a", 10000)
    local words = string.rep("NVIDIA A100 SXM4 80GB ", 450)
    assert.is_false(eval("s.matches('(a+)+$')", { s = a .. "!" }))
    assert.is_false(eval("s.matches('^(a|a?)+$')", { s = a .. "!" }))
    assert.is_false(eval("s.matches('(x+x+)+y')", { s = string.rep("x", 5000) }))
    assert.is_false(eval("s.matches('^(\\\\w+\\\\s?)+$')", { s = words .. "!" }))
    assert.is_true(eval("s.matches('^(\\\\w+\\\\s?)+$')", { s = words .. "end" }))
    assert.are.same({ "" }, eval("s.findAll('(a|aa)*$')", { s = a .. "!" }))
    -- find: the leftmost match lies past a run that makes a backtracker explode
    assert.are.equal("ab", eval("s.find('(a+)+b')", { s = a .. "!ab" }))
    assert.are.same({ "ab", "aab" }, eval("s.findAll('(a|aa)+b')", { s = a .. "!ab-aab" }))
    -- the same through the fallback alone
    assert.is_nil(core.cel_regex("(a+)+$", a .. "!", { engine = "nfa" }))
    local ms, me = core.cel_regex("(a|aa)*$", a .. "!", { engine = "nfa" })
    assert.are.same({ 10001, 10001 }, { ms, me })
  end)

  it("keeps the limit error when the fallback cannot take the pattern", function()
    -- 25 x 1000 optional copies, one after the other: over the fallback's
    -- program size cap, yet valid RE2 (nested, (?:a{0,1000}){25}, it is
    -- refused at compile time: cel_regex_spec)
    local p = string.rep("a{0,1000}", 25) .. "$"
    local ok, msg = pcall(core.cel_regex, p, "a", { engine = "nfa" })
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("not supported by the fallback", 1, true))
    ok, msg = pcall(eval, "s.matches('" .. p .. "')", { s = string.rep("a", 3000) .. "!" })
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("regex match exceeded its limits", 1, true))
  end)

  it("returns leftmost-first boundaries, not the longest match", function()
    local cases = {
      { "'xab'.find('a|ab')", "a" },
      { "'abcd'.find('(a|ab)(c|bcd)(d*)')", "abcd" },
      { "'aaa'.find('a*?')", "" },
      { "'aaa'.find('a+?')", "a" },
      { "'aaa'.find('(?U)a+')", "a" },
      { "'aaa'.find('(?U)a+?')", "aaa" },
      { "'aaaaa'.find('a{2,4}?')", "aa" },
      { "'aaaaa'.find('a{2,4}')", "aaaa" },
      { "'aa'.find('(|a)*')", "" },
      { "'aa'.find('(|a)+')", "" },
      { "'ab'.find('(a|ab)*')", "a" },
      { "'xyz'.find('y|xyz')", "xyz" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], eval_forced(c[1]), c[1])
      assert.are.equal(c[2], eval(c[1]), c[1] .. " (PCRE2)")
    end
    local lists = {
      { "'abab'.findAll('a|ab')", { "a", "a" } },
      { "'abab'.findAll('ab|a')", { "ab", "ab" } },
      { "'abc'.findAll('x*')", { "", "", "", "" } },
      { "'a1b22c333'.findAll('[0-9]+', 2)", { "1", "22" } },
      { "'ñaña'.findAll('a*')", { "", "a", "a" } },
      { "'baaab'.findAll('a*')", { "", "aaa", "" } },
      { "'a\\nb\\n'.findAll('(?m)^')", { "", "", "" } },
      { "'a\\nb\\n'.findAll('(?m)$')", { "", "", "" } },
    }
    for _, c in ipairs(lists) do
      assert.are.same(c[2], eval_forced(c[1]), c[1])
      assert.are.same(c[2], eval(c[1]), c[1] .. " (PCRE2)")
    end
  end)

  it("follows RE2 where PCRE2's semantics differ", function()
    -- answers of Go's regexp (RE2), the engine Kubernetes evaluates CEL with
    local nfa = { engine = "nfa" }
    -- (?i) closes each class part under case folding before negating it, and
    -- U+212A KELVIN SIGN folds to k, U+017F LONG S to s
    assert.is_nil(core.cel_regex("(?i)\\W", "\u{212a}", nfa))
    assert.is_nil(core.cel_regex("(?i)[^k]", "\u{212a}", nfa))
    assert.are.same({ 0, 2 }, { core.cel_regex("(?i)\\w", "\u{17f}", nfa) })
    assert.are.same({ 0, 3 }, { core.cel_regex("(?i)k", "\u{212a}", nfa) })
    assert.are.same({ 0, 1 }, { core.cel_regex("(?i)[[:upper:]]", "a", nfa) })
    -- an iteration that prefers the empty string ends the loop (RE2 and Go since 2021)
    assert.are.same({ 0, 0 }, { core.cel_regex("(|a)*", "aa", nfa) })
    -- (?m)^ also matches after a final newline
    assert.are.same({ 2, 2 }, { core.cel_regex("(?m)^$", "a\n", nfa) })
    assert.are.same({ 2, 2 }, { core.cel_regex("(?m)^$", "a\n", { engine = "pcre2" }) })
  end)

  it("matches code points, Unicode classes and non-ASCII case folding", function()
    local nfa = { engine = "nfa" }
    assert.are.same({ 1, 7 }, { core.cel_regex("\\pL+", "1αβγ2", nfa) })
    assert.are.same({ 0, 4 }, { core.cel_regex("\\p{Greek}{2}", "αβγ", nfa) })
    assert.is_nil(core.cel_regex("^\\PL", "é", nfa))
    assert.are.same({ 0, 2 }, { core.cel_regex("(?i)é", "É", nfa) })
    assert.are.same({ 0, 4 }, { core.cel_regex("(?i)[à-ÿ]+", "ÀÉ", nfa) })
    assert.are.same({ 0, 2 }, { core.cel_regex("^.$", "é", nfa) })
    assert.are.same({ 0, 4 }, { core.cel_regex("^[^a]{2}$", "éβ", nfa) })
    assert.are.same({ 0, 2 }, { core.cel_regex("\\x{e9}", "é", nfa) })
    -- a search may start inside the text: ^ and \b still see what precedes it
    assert.is_nil(core.cel_regex("^a", "ba", { engine = "nfa", start = 1 }))
    assert.is_nil(core.cel_regex("\\ba", "ba", { engine = "nfa", start = 1 }))
    assert.are.same({ 2, 2 }, { core.cel_regex("x*", "éé", { engine = "nfa", start = 2 }) })
    assert.are.equal("ña", eval_forced("'mañana'.find('(?i)Ñ+a')"))
  end)

  it("agrees with PCRE2 on generated patterns and subjects", function()
    local next_case = generator(20260101)
    local compared, gave_up = 0, 0
    for _ = 1, 500 do
      local p, s = next_case()
      local want = answer(p, s, "pcre2")
      if want then
        compared = compared + 1
        local got = answer(p, s, "nfa")
        assert.are.equal(want, got, string.format("pattern %q subject %q", p, s))
      else
        gave_up = gave_up + 1
      end
    end
    assert.is_true(compared >= 450, "compared " .. compared .. ", PCRE2 gave up on " .. gave_up)
  end)

  it("gives the same CEL results with every match forced through the fallback", function()
    local next_case = generator(77)
    for _ = 1, 150 do
      local p, s = next_case()
      for _, e in ipairs({ "s.matches(p)", "s.find(p)", "s.findAll(p)" }) do
        local b = { s = s, p = p }
        local ok1, v1 = pcall(eval, e, b)
        local ok2, v2 = pcall(eval_forced, e, b)
        if ok1 then
          assert.is_true(ok2, e .. " " .. p .. ": " .. tostring(v2))
          assert.are.same(v1, v2, string.format("%s pattern %q subject %q", e, p, s))
        end
      end
    end
  end)
end)
