-- jload_spec.lua - engine/base/jload.c builds the tree json_loadb builds,
-- or stands back: wherever de_json_parse answers, json_loadb gives an equal
-- tree (same types, same key order), and wherever json_loadb refuses,
-- de_json_parse gives nothing and de_json_loadb's error is json_loadb's,
-- word for word.  On every object of the manifest corpus and the
-- conformance vectors, on hostile texts, and on a few thousand mutations.
local core = require "draengine.core"
local H = require "support.helper"

local FLAGSETS = {
  {}, { decode_any = true }, { reject_duplicates = true },
  { decode_any = true, reject_duplicates = true, allow_nul = true },
}

-- ours (nil: stood back) and theirs (nil: refused) for text under flags,
-- checked against each other
local function compare(text, flags, what)
  local differs, ours, theirs, jerr, derr = core.json_reload(text, flags)
  assert.is_nil(differs, what)
  if ours ~= nil then
    assert.are.equal(theirs, ours, what)
  end
  if theirs == nil then
    assert.is_nil(ours, what)
    assert.are.equal(jerr, derr, what) -- the error the user sees is jansson's
  end
  return ours, theirs
end

local files = H.find_files

-- a deterministic stream of numbers in [0, n)
local function lcg(seed)
  local x = seed
  return function(n)
    x = (x * 1103515245 + 12345) % 2147483648
    return x % n
  end
end

describe("jload", function()
  it("reads every corpus and conformance object as json_loadb does, and answers for nearly all", function()
    local shared = assert(H.shared_dir())
    local texts = {}
    for _, f in ipairs(files(shared, "*.json")) do
      local fh = assert(io.open(f, "rb"))
      texts[#texts + 1] = { fh:read("a"), f }
      fh:close()
    end
    for _, f in ipairs(files(shared .. "/corpus", "*.yaml")) do
      local ok, docs = pcall(core.load_docs, f)
      if ok then
        for i, d in ipairs(docs) do
          texts[#texts + 1] = { core.json_encode(d.object or d, { pretty = i % 2 == 0 }), f .. " #" .. i }
        end
      end
    end
    local accepted, answered = 0, 0
    for _, t in ipairs(texts) do
      for _, f in ipairs(FLAGSETS) do
        local ours, theirs = compare(t[1], f, t[2])
        if theirs then accepted = accepted + 1 end
        if ours then answered = answered + 1 end
      end
    end
    assert.is_true(accepted > 4000, "only " .. accepted .. " texts read")
    -- it stands back only for the rare text (a \u0000, a duplicate key, a
    -- long integer); if it stood back for most, serve would gain nothing
    assert.is_true(answered >= accepted * 0.98, answered .. " of " .. accepted .. " answered")
  end)

  it("answers for escapes, UTF-8, numbers and spacing exactly as json_loadb reads them", function()
    local cases = {
      '{}', '[]', ' \t\r\n{ "a" : [ 1 , 2 ] }\n ', '{"":""}',
      '["plain","quote \\" backslash \\\\ slash \\/","\\b\\f\\n\\r\\t"]',
      '["\\u0001 \\u001f \\u007f \\u0080 \\u07ff \\u0800 \\uffff"]',
      '["é ü 日本 \xF0\x9F\x98\x80 \x7F", "\\ud83d\\ude00 \\uD83D\\uDE00 \\udbff\\udfff \\ud800\\udc00"]',
      '{"k\\"ey":"v","\\u00e9":1,"a\\u00e9b":{"\\n":[]}}',
      '[0,-0,1,-1,123456789012345678,-123456789012345678,10,900]',
      '[0.5,-0.5,1e300,1E+2,1e-2,2.5E-3,-0.0,3.0,1.5e-7,4.9e-324,1e-400,0.1,123.456e7]',
      '[true,false,null,[[[]]],{"a":{"b":[{}]}}]',
      '{"a":1,"b":{"a":2},"c":[{"a":3}]}',
    }
    for _, c in ipairs(cases) do
      local ours = compare(c, {}, c)
      assert.is_not_nil(ours, c)
    end
    for _, c in ipairs{ '7', '-0.25', '"scalar"', 'null', 'true', '  false  ' } do
      assert.is_not_nil((compare(c, { decode_any = true }, c)), c)
      assert.is_nil((compare(c, {}, c)), c) -- not an object or an array
    end
  end)

  it("stands back where json_loadb's answer is not plain, and json_loadb's answer stands", function()
    local deep = string.rep("[", 300) .. string.rep("]", 300)
    local accepted_by_jansson = {
      { '["a\\u0000b"]', { allow_nul = true } },
      { '{"a":1,"a":2}', {} },                 -- jansson keeps the first's place, the last's value
      { '[1234567890123456789]', {} },         -- 19 digits: jansson's strtoll judges
      { '[-9223372036854775808]', {} },
      { ("[%s]"):format(string.rep("1", 70) .. ".5"), {} }, -- a real's text past 63 bytes
      { deep, {} },                            -- past 256 levels
      { '[1]', { int_as_real = true } },       -- a flag it does not know
    }
    for _, c in ipairs(accepted_by_jansson) do
      local ours, theirs = compare(c[1], c[2], c[1])
      assert.is_nil(ours, c[1])
      assert.is_not_nil(theirs, c[1])
    end
    local refused = {
      '', ' ', '{', '[1,]', '{"a":1,}', '{"a" 1}', '{a:1}', '[01]', '[-]', '[1.]', '[.5]', '[1e]', '[1e+]',
      '[+1]', '[tru]', '[truex]', '[nul]', '["\\x"]', '["\\u12"]', '["\\u12g4"]', '["a\\u0000b"]',
      '["\\ud800"]', '["\\udc00"]', '["\\ud800\\u0041"]', '["\\ud800x"]', '["tab\there"]', '["nl\nhere"]',
      '["\x80"]', '["a\xC0\xAFb"]', '["\xED\xA0\x80"]', '["\xF4\x90\x80\x80"]', '["\xE2\x82"]', '["\xFF"]',
      '[1] x', '[1][2]', '{"a":1}}', '[1e400]', '[-1e400]', '[9223372036854775808]', '["unterminated',
      '{"a":1,"a":2}', -- under reject_duplicates (below)
      string.rep("[", 2100) .. string.rep("]", 2100), '\xEF\xBB\xBF{}', '{"\\u0000":1}',
    }
    for _, c in ipairs(refused) do
      local ours, theirs = compare(c, { reject_duplicates = true }, c)
      assert.is_nil(theirs, c)
      assert.is_nil(ours, c)
    end
  end)

  it("agrees with json_loadb on thousands of mutated texts", function()
    local seeds = {
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-1","namespace":"ns","labels":{"a":"b"}},'
        .. '"spec":{"containers":[{"name":"c","image":"x","resources":{"claims":[{"name":"gpu"}]}}],'
        .. '"priority":-5,"overhead":1.5e3,"tolerations":[],"ok":true,"none":null}}',
      '["\\u00e9\\ud83d\\ude00 é 日本",{"k\\ty":[0,-0.5,1E2]},"\\\\\\"\\/"]',
    }
    local alphabet = { '"', '\\', '{', '}', '[', ']', ',', ':', '0', '-', '.', 'e', 'u', 'd', '8', ' ',
      '\n', '\0', '\x80', '\xC3', '\xA9', '\xF0', 't', 'n' }
    local rnd = lcg(20261205)
    local answered, refused = 0, 0
    for round = 1, 3000 do
      local s = seeds[round % #seeds + 1]
      for _ = 1, 1 + rnd(3) do
        local at = 1 + rnd(#s)
        local op = rnd(4)
        if op == 0 then -- replace a byte
          s = s:sub(1, at - 1) .. alphabet[1 + rnd(#alphabet)] .. s:sub(at + 1)
        elseif op == 1 then -- insert one
          s = s:sub(1, at - 1) .. alphabet[1 + rnd(#alphabet)] .. s:sub(at)
        elseif op == 2 then -- delete one
          s = s:sub(1, at - 1) .. s:sub(at + 1)
        else -- cut the text short
          s = s:sub(1, at)
        end
      end
      for _, f in ipairs{ {}, { reject_duplicates = true, decode_any = true } } do
        local ours, theirs = compare(s, f, ("mutation %d: %q"):format(round, s))
        if ours then answered = answered + 1 end
        if not theirs then refused = refused + 1 end
      end
    end
    -- both outcomes were exercised many times
    assert.is_true(answered > 500, answered .. " answered")
    assert.is_true(refused > 2000, refused .. " refused")
  end)
end)
