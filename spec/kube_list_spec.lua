-- kube_list_spec.lua - list answers are parsed while they stream in: memory
-- stays near one object whatever the lists weigh (measured as the peak RSS
-- of a process listing four resources of 48 MiB each), the streaming parser
-- gives the same result however the network cuts the bytes, and it refuses
-- what is not one complete list.
local K = require "support.kubeapi"
local H = require "support.helper"
local core = require "draengine.core"
local kube = core.kube

local function names(items)
  local out = {}
  for i, it in ipairs(items) do out[i] = type(it) == "table" and it.metadata and it.metadata.name or it end
  return out
end

describe("kube list memory", function()
  it("holds one object's text at a time, not the lists (4 x 48 MiB listed at once)", function()
    local mib = H.asan and 24 or 48
    -- its own process, so the peak RSS is this listing's; under ASan a
    -- small quarantine, or freed memory would count as held
    local env = H.asan and ("ASAN_OPTIONS=\"$ASAN_OPTIONS:quarantine_size_mb=4\" ") or ""
    local p = io.popen(env .. "lua5.4 " .. H.shell_quote(H.root .. "/spec/support/kube_list_rss.lua") .. " " .. mib .. " 2>&1")
    local out = p:read("a")
    p:close()
    local before, after, peak, events, synced = out:match("(%d+)%s+(%d+)%s+(%d+)%s+(%d+)%s+(%a+)")
    assert.truthy(before, out)
    local items = math.floor(mib * 1024 * 1024 / (32 * 1024))
    assert.are.equal("true", synced)
    assert.are.equal(4 * items, tonumber(events))
    -- the listing's parser buffers: a few copies of one 32 KiB object per
    -- resource (they were the whole 48 MiB answer, then its parse)
    assert.is_true(tonumber(peak) < 1024 * 1024, "list parsing held " .. peak .. " bytes")
    -- the process: before, ~300 MiB more for 4 x 48 MiB
    local grew = (tonumber(after) - tonumber(before)) / 1024
    assert.is_true(grew < (H.asan and 96 or 48), string.format("peak RSS grew by %.1f MiB for %d MiB of lists", grew, 4 * mib))
  end)
end)

describe("kube stream decoding", function()
  local tricky = [==[ {"kind" : "NodeList", "apiVersion":"v1",
    "items" : [ {"metadata":{"name":"a\"]}[{\\","annotations":{"x":"}}]]{{\u005d"}}, "spec":{"n":[1,[2,[3]],{}],"f":-1.5e3,"t":true,"z":null}},
      {"metadata":{"name":"b"}} ,{"metadata":{"name":"\u00e9\ud83d\ude00"}} ] ,
    "metadata" : {"resourceVersion":"42","continue":"tok\"en"} }
  ]==]

  it("gives the same items and metadata however the bytes are cut", function()
    local whole, md = kube.parse_list(tricky)
    assert.truthy(whole, md)
    assert.are.same({ 'a"]}[{\\', "b", "é😀" }, names(whole))
    assert.are.equal("}}]]{{]", whole[1].metadata.annotations.x)
    assert.are.same({ 1, { 2, { 3 } }, {} }, whole[1].spec.n)
    assert.are.same({ resourceVersion = "42", continue = 'tok"en' }, md.metadata)
    assert.are.equal("NodeList", md.kind)
    for chunk = 1, 64 do
      local items, m = kube.parse_list(tricky, chunk)
      assert.are.same(whole, items, "chunk " .. chunk)
      assert.are.same(md, m, "chunk " .. chunk)
    end
    -- empty and null item lists, metadata first or last, scalars as the last member
    assert.are.same({}, (kube.parse_list('{"items":[]}')))
    assert.are.same({}, (kube.parse_list('{"items":null,"metadata":{}}')))
    local it, m = kube.parse_list('{"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"x"}}],"n":5}', 3)
    assert.are.same({ "x" }, names(it))
    assert.are.equal(5, m.n)
  end)

  it("refuses what is not one complete list, saying why", function()
    local cases = {
      { "[]", "the answer is not a JSON object" },
      { "", "the answer ends early" },
      { '{"items":[{"metadata":{"name":"a"}}', "the answer ends early" },
      { '{"items":{"a":1}}', "items is not a list" },
      { '{"items":"x"}', "items is not a list" },
      { '{"items":[],"items":[]}', 'duplicate key "items"' },
      { '{"\\u0069tems":[{"a":1}]}', "items: member name spelt with escapes" },
      { '{"metadata":{},"metadata":{}}', "duplicate object key" },
      { '{"items":[{"a":1,"a":2}]}', "items: duplicate object key" },
      { '{"items":[{"a":1]}', "items: '}' expected near ']'" },
      { '{"items":[}]}', "items: expected a value" },
      { '{"items":[{"a":1},]}', "items: expected a value" },
      { '{"kind":,"items":[]}', "expected a value" },
      { '{"items":[{"a":1}}]}', "items: expected ',' or ']'" },
      { '{"items":[{"a":tru}]}', "items:" },
      { '{"items":[]} {"items":[]}', "data after the end of the answer" },
      { '{"items":[] "metadata":{}}', "expected ',' or '}'" },
      { '{items:[]}', "expected a member name" },
      { '{"items" []}', "expected ':'" },
      { '{"items":[' .. string.rep("[", 600) .. string.rep("]", 600) .. ']}', "nested too deeply" },
      { '{"' .. string.rep("k", 300) .. '":1}', "member name too long" },
    }
    for _, c in ipairs(cases) do
      for _, chunk in ipairs{ 1, 7, 1 << 20 } do
        local items, err = kube.parse_list(c[1], chunk)
        assert.is_nil(items, c[1])
        assert.truthy(err:find(c[2], 1, true), c[1] .. " -> " .. err)
      end
    end
    -- an item over the cap, and metadata over its 1 MiB
    local _, err = kube.parse_list('{"items":[{"blob":"' .. string.rep("x", 5000) .. '"}]}', 100, 4096)
    assert.truthy(err:find("an item is larger than the cap", 1, true), err)
    _, err = kube.parse_list('{"metadata":{"blob":"' .. string.rep("x", (1 << 20) + 10) .. '"},"items":[]}', 65536)
    assert.truthy(err:find("list metadata larger than 1 MiB", 1, true), err)
  end)

  it("decodes watch events and refuses lines that are not one", function()
    local t, obj = kube.decode_watch('{"type":"ADDED","object":{"metadata":{"name":"a"}}}')
    assert.are.same({ "ADDED", "a" }, { t, obj.metadata.name })
    local code, reason
    t, obj, code, reason = kube.decode_watch('{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}')
    assert.are.same({ "ERROR", 410, "Expired", "too old" }, { t, code, reason, obj.message })
    t, _, code, reason = kube.decode_watch('{"type":"ERROR","object":{"code":99999}}')
    assert.are.same({ "ERROR", 200, "ErrorEvent" }, { t, code, reason })
    assert.are.equal("OTHER", (kube.decode_watch('{"type":"SOMETHING","object":{}}')))
    for _, c in ipairs{
      { "not json", "UndecodableEvent" }, { "[1]", "UndecodableEvent" }, { '"x"', "UndecodableEvent" },
      { '{"type":"ADDED","object":{"a":1},"object":{"a":2}}', "UndecodableEvent" }, -- duplicate key
      { '{"type":"ADDED"}', "MalformedEvent" }, { '{"object":{}}', "MalformedEvent" },
      { '{"type":7,"object":{}}', "MalformedEvent" }, { '{"type":"ADDED","object":[]}', "MalformedEvent" },
    } do
      local v, why = kube.decode_watch(c[1])
      assert.is_nil(v, c[1])
      assert.are.equal(c[2], why, c[1])
    end
  end)

  it("peeks at a watch line's type and its object's names without decoding it", function()
    local mf = '"managedFields":[{"manager":"m","fieldsV1":{"f:metadata":{"f:name":{},"f:namespace":{}}}}]'
    local obj = '{"kind":"ResourceClaim","metadata":{"name":"c-1","namespace":"ns",' .. mf
      .. ',"resourceVersion":"4711","labels":{"name":"not-this","namespace":"nor-this"}},'
      .. '"spec":{"metadata":{"name":"deeper"}},"status":{}}'
    assert.are.same({ "MODIFIED", "ns", "c-1", "4711" }, { kube.peek_watch('{"type":"MODIFIED","object":' .. obj .. '}') })
    -- spaces; the type must come first (the server's order), else the line is decoded
    assert.are.same({ "DELETED", "ns", "c-1", "4711" },
      { kube.peek_watch('{ "type" : "DELETED" ,\n "object" : ' .. obj .. ' }') })
    assert.is_nil(kube.peek_watch('{"object":' .. obj .. ',"type":"DELETED"}'))
    -- cluster-scoped: no namespace; an unknown type
    assert.are.same({ "OTHER", "", "n", "9" },
      { kube.peek_watch('{"type":"NEW","object":{"metadata":{"resourceVersion":"9","name":"n"}}}') })
    -- whatever follows metadata is not looked at: decoding still judges it
    assert.are.same({ "ADDED", "", "n", "9" },
      { kube.peek_watch('{"type":"ADDED","object":{"metadata":{"name":"n","resourceVersion":"9"},"spec":nonsense') })
    for _, line in ipairs{
      '', 'not json', '[]', '{"type":"MODIFIED"}',
      '{"type":"MODIFIED","object":{"metadata":{"name":"n"}}}',                      -- no resourceVersion
      '{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"1"}}}',           -- no name
      '{"object":{"metadata":{"name":"n","resourceVersion":"1"}}}',                   -- no type before metadata ends
      '{"type":"MODIFIED","object":{"metadata":{"name":"a\\u0062","resourceVersion":"1"}}}', -- an escape
      '{"type":"MODIFIED","object":{"metadata":{"name":7,"resourceVersion":"1"}}}',  -- not a string
      '{"type":"MODIFIED","object":{"metadata":{"name":"' .. string.rep("n", 300) .. '","resourceVersion":"1"}}}',
      '{"type":"MODIFIED","object":{"spec":{"metadata":{"name":"n","resourceVersion":"1"}}}}', -- not the object's
      '{"type":"MODIFIED","other":{"metadata":{"name":"n","resourceVersion":"1"}}}',  -- not in "object"
      '{"type":"MODIFIED","object":{"kind":"X"},"other":{"metadata":{"name":"n","resourceVersion":"1"}}}',
      '{"type":"MODIFIED","object":{"metadata":{"name":"n","resourceVersion":"1"', -- cut in metadata
      '{"type":"MODIFIED","object":' .. string.rep("[", 70) .. '}',
    } do
      assert.is_nil(kube.peek_watch(line), line)
    end
  end)

  it("leaves out the object's own metadata.managedFields, and nothing else", function()
    local mf = '[{"manager":"kube-controller-manager","operation":"Update","fieldsType":"FieldsV1",'
      .. '"fieldsV1":{"f:metadata":{"f:ownerReferences":{".":{},"k:{\\"uid\\":\\"u\\"}":{}}},'
      .. '"f:spec":{"f:devices":{"f:requests":{}}}},"time":"2026-12-03T10:00:00Z"},'
      .. '{"manager":"x]}\\"","operation":"Update","fieldsV1":{"f:status":{"f:allocation":{}}}}]'
    -- the member first, last, alone and in the middle of metadata, with spaces
    local metas = {
      '{"managedFields":' .. mf .. ',"name":"c","namespace":"ns"}',
      '{"name":"c","namespace":"ns","managedFields":' .. mf .. '}',
      '{"name":"c","namespace":"ns" , "managedFields" : ' .. mf .. ' }',
      '{"name":"c","managedFields":' .. mf .. ',"namespace":"ns"}',
    }
    for _, m in ipairs(metas) do
      local obj = '{"kind":"ResourceClaim","metadata":' .. m .. ',"spec":{"devices":{"requests":[]}}}'
      local t, o = kube.decode_watch('{"type":"MODIFIED","object":' .. obj .. '}')
      assert.are.equal("MODIFIED", t, m)
      assert.are.same({ name = "c", namespace = "ns" }, o.metadata, m)
      assert.are.same({ devices = { requests = {} } }, o.spec, m)
      local items, md = kube.parse_list('{"metadata":{"resourceVersion":"9"},"items":[' .. obj .. ',' .. obj .. ']}', 7)
      assert.are.equal(2, #items, m)
      assert.are.same({ name = "c", namespace = "ns" }, items[2].metadata, m)
      assert.are.equal("9", md.metadata.resourceVersion)
    end
    -- kept: a label or annotation of that name (a string), the field of a
    -- nested object's metadata (a template's), and a top-level member
    local keep = {
      { '{"type":"ADDED","object":{"metadata":{"name":"a","annotations":{"managedFields":"[1]"}}}}',
        function(o) return o.metadata.annotations.managedFields == "[1]" end },
      { '{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"metadata":{"managedFields":[{"m":1}]}}}}',
        function(o) return o.spec.metadata.managedFields[1].m == 1 end },
      { '{"type":"ADDED","object":{"managedFields":[1],"metadata":{"name":"a"}}}',
        function(o) return o.managedFields[1] == 1 end },
      { '{"type":"ADDED","object":{"metadata":{"name":"a","x":"\\"managedFields\\":[1]"}}}',
        function(o) return o.metadata.x == '"managedFields":[1]' end },
    }
    for _, c in ipairs(keep) do
      local _, o = kube.decode_watch(c[1])
      assert.is_true(c[2](o), c[1])
      assert.are.equal("a", o.metadata.name, c[1])
    end
    -- errors quote the real text: an error after the member has the same
    -- message as without the cut
    local bad = '{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"m":1}]},"spec":{"x":tru}}}'
    local v, why, msg = kube.decode_watch(bad)
    assert.is_nil(v)
    assert.are.equal("UndecodableEvent", why)
    local _, _, whole = kube.decode_watch((bad:gsub("managedFields", "managedFieldz")))
    assert.are.equal(whole, msg)
    assert.truthy(msg:find("tru", 1, true), msg)
    -- unterminated or not an array: decoded whole, as before
    local _, o = kube.decode_watch('{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":{"x":1}}}}')
    assert.are.same({ x = 1 }, o.metadata.managedFields)
  end)

  it("reports an undecodable list page from the server, relists, and syncs once it is whole", function()
    local srv = K.start{}
    srv:load{ K.node("n1") }
    srv:faults{ rules = { { method = "GET", path = "/api/v1/nodes\\?", status = 200, count = 2,
      body = '{"kind":"NodeList","items":{"oops":true}}', content_type = "application/json" } } }
    local cl = srv:client()
    local inf = cl:informer{ resources = { "nodes" }, seed = 1, backoff_ms = 50 }
    local synced = K.wait_for(function() inf:poll(50); return inf:synced() end, 10, 0)
    local f = (cl:failures())[1]
    srv:stop()
    assert.is_true(synced)
    assert.are.same({ "nodes", "list", "200", "UndecodableBody", 2 }, { f.resource, f.verb, f.code, f.reason, f.count })
  end)
end)
