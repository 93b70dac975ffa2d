-- jdump_spec.lua - engine/base/jdump.c writes what json_dumps writes, byte
-- for byte, and copies trees as json_deep_copy does: on every object of the manifest corpus and the conformance
-- vectors, under each flag set draengine uses and the others it supports,
-- and on hostile strings; what json_dumps refuses, it refuses.
local core = require "draengine.core"
local H = require "support.helper"

local FLAGS = {
  { compact = true },
  { compact = true, encode_any = true },
  {},
  { ensure_ascii = true },
  { compact = true, escape_slash = true, ensure_ascii = true },
  { compact = true, preserve_order = true, precision = 5 },
  -- handed to json_dumps whole
  { indent = 2 }, { compact = true, sort_keys = true }, { embed = true },
}

-- the same text from both under every flag set (a scalar: refused by both
-- unless encode_any); how many flag sets wrote something
local function same(text, what)
  local wrote = 0
  for _, f in ipairs(FLAGS) do
    local ours, theirs, copied = core.json_redump(text, f)
    assert.are.equal(theirs, ours, what)
    assert.are.equal(theirs, copied, what) -- de_json_copy: the same tree, keys in order
    if theirs then wrote = wrote + 1 end
  end
  return wrote
end

local files = H.find_files

describe("jdump", function()
  it("writes every corpus and conformance object as json_dumps does", function()
    local shared = assert(H.shared_dir())
    local n = 0
    for _, f in ipairs(files(shared, "*.json")) do
      local fh = assert(io.open(f, "rb"))
      local text = fh:read("a")
      fh:close()
      if pcall(core.json_decode, text) then
        assert.is_true(same(text, f) > 0, f)
        n = n + 1
      end
    end
    for _, f in ipairs(files(shared .. "/corpus", "*.yaml")) do
      local ok, docs = pcall(core.load_docs, f)
      if ok then
        for i, d in ipairs(docs) do
          assert.are.equal(#FLAGS, same(core.json_encode(d.object or d), f .. " #" .. i))
          n = n + 1
        end
      end
    end
    assert.is_true(n > 1000, "only " .. n .. " objects compared")
  end)

  it("escapes strings as json_dumps does", function()
    local cases = {
      '"plain"', '""', '"quote \\" backslash \\\\ slash /"', '"\\b\\f\\n\\r\\t"',
      '"\\u0000 nul \\u0001 \\u001f \\u007f \\u0080"', '"é ü 日本 \\u2028 \\u2029"',
      '"astral \\ud83d\\ude00 \\udbff\\udfff"', '"a/b/c</script>"',
      '{"k\\"ey":"v","\\u00e9":[1,-2,9223372036854775807,-9223372036854775808],"":{}}',
      '[true,false,null,[],{},[[]],{"a":{"b":[{}]}}]', '[0.5,1e300,-0.0,3.0,1.5e-7]',
      '7', '"scalar"', 'null', '1.25',
    }
    for _, c in ipairs(cases) do
      local scalar = not c:find("^[%[{]")
      assert.are.equal(scalar and 1 or #FLAGS, same(c, c), c)
    end
  end)

  it("refuses what json_dumps refuses", function()
    -- strings that are not UTF-8: a lone continuation byte, an overlong
    -- form, a surrogate, past U+10FFFF, a sequence cut short
    for _, raw in ipairs{ "\x80", "a\xC0\xAFb", "\xED\xA0\x80", "\xF4\x90\x80\x80", "ok\xE2\x82", "\xFF" } do
      for _, f in ipairs{ { compact = true }, { ensure_ascii = true } } do
        local ours, theirs = core.json_redump(raw, { raw = true, compact = f.compact, ensure_ascii = f.ensure_ascii })
        assert.is_nil(theirs, raw)
        assert.is_nil(ours, raw)
      end
    end
    -- valid UTF-8 given unchecked is written as checked
    local ours, theirs = core.json_redump("\xF0\x9F\x98\x80 \x7F", { raw = true, ensure_ascii = true })
    assert.are.equal('["\\uD83D\\uDE00 \x7F"]', theirs)
    assert.are.equal(theirs, ours)
    -- a scalar without encode_any
    ours, theirs = core.json_redump('"s"', { compact = true })
    assert.is_nil(theirs)
    assert.is_nil(ours)
  end)
end)
