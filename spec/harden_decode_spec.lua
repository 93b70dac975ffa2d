-- harden_decode_spec.lua - strict decoding as kubectl's strict field
-- validation does it: duplicate keys are errors in YAML and JSON (at the top
-- level, nested, inside List items, on the fast JSON path), `List.items`
-- must be a list, a NUL in a string is refused in YAML as in JSON, and
-- error messages show values whole or describe them, never cut short.
local core = require "draengine.core"
local H = require "support.helper"

local function refused(text, ...)
  local g = core.graph()
  local ok, err = pcall(g.apply, g, text)
  assert.is_false(ok, "accepted:\n" .. text)
  err = tostring(err)
  for _, want in ipairs({ ... }) do
    assert.truthy(err:find(want, 1, true), "\nwant: " .. want .. "\ngot:  " .. err)
  end
  return err
end

local function accepted(text)
  local g = core.graph()
  local ok, err = pcall(g.apply, g, text)
  assert.is_true(ok, tostring(err))
  return g
end

local CLASS = [[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
]]

describe("duplicate keys", function()
  it("YAML: kind cannot be overridden inside one object", function()
    refused(CLASS .. "kind: ResourceClaim\n", 'line 5:1: yaml: key "kind" already set in map')
    refused("kind: ResourceClaim\n" .. CLASS, 'line 3:1: yaml: key "kind" already set in map')
  end)

  it("YAML: nested and flow mappings, and keys equal only once converted", function()
    refused(CLASS .. "  name: other\n", 'line 5:3: yaml: key "name" already set in map')
    refused([[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s, name: t}
]], 'yaml: key "name" already set in map')
    refused([[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: n
  pool: {name: n, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      1: {int: 1}
      "1": {int: 2}
]], 'line 12:7: yaml: key "1" already set in map')
  end)

  it("YAML: merge keys supply values an explicit key may replace once, never twice", function()
    local g = accepted([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  <<: {name: from-merge, labels: {a: b}}
  name: explicit
]])
    assert.truthy(g:class("explicit"))
    -- a merge never replaces what is written in the mapping
    g = accepted([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: written
  <<: {name: merged}
]])
    assert.truthy(g:class("written"))
    refused([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  <<: {name: from-merge}
  name: one
  name: two
]], 'line 6:3: yaml: key "name" already set in map')
  end)

  it("JSON: top level, nested, inside List items, in streams of values", function()
    refused('{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"x"},"kind":"ResourceClaim"}',
      'json: duplicate field "kind"')
    refused('{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"x","name":"y"}}',
      'json: duplicate field "name"')
    refused('{"kind":"List","items":[],"kind":"ResourceClaim"}', 'line 1:27: json: duplicate field "kind"')
    refused('{"kind":"List","items":[],"items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}]}',
      'json: duplicate field "items"')
    refused('{"kind":"List","items":[{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","kind":"x","metadata":{"name":"a"}}]}',
      'json: duplicate field "kind"')
    refused('{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}\n{"apiVersion":"v1","kind":"Node","kind":"Pod"}',
      "document 2", 'json: duplicate field "kind"')
  end)

  it("JSON List files on the fast path refuse duplicates inside a device too", function()
    local devs = {}
    for i = 0, 40 do
      devs[#devs + 1] = string.format('{"name":"gpu-%d","attributes":{"model":{"string":"A"}}}', i)
    end
    local function list(dev41)
      return '{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",' ..
        '"metadata":{"name":"s"},"spec":{"driver":"gpu.example.com","nodeName":"n",' ..
        '"pool":{"name":"n","generation":1,"resourceSliceCount":1},"devices":[' ..
        table.concat(devs, ",") .. "," .. dev41 .. "]}}]}"
    end
    local good = H.write_temp(list('{"name":"gpu-x"}'), ".json")
    local bad = H.write_temp(list('{"name":"gpu-y","attributes":{"model":{"string":"A"},"model":{"int":3}}}'), ".json")
    local dup_name = H.write_temp(list('{"name":"gpu-y","name":"gpu-0"}'), ".json")
    local g = core.graph()
    g:load(good)
    assert.are.equal(42, #g:devices())
    for _, f in ipairs({ bad, dup_name }) do
      local ok, err = pcall(core.graph().load, core.graph(), f)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("json: duplicate field", 1, true), tostring(err))
    end
    os.remove(good); os.remove(bad); os.remove(dup_name)
  end)
end)

describe("List.items", function()
  it("must be a list: an object, a string or a number is an error, not an ignored List", function()
    refused("apiVersion: v1\nkind: List\nitems:\n  apiVersion: v1\n  kind: Node\n  metadata: {name: n}\n",
      'kind "List": items: Invalid value: an object: must be a list')
    refused('{"kind":"List","items":"x"}', 'items: Invalid value: a string: must be a list')
    refused('{"kind":"DeviceClassList","items":7}', 'kind "DeviceClassList": items: Invalid value: a number: must be a list')
    -- null or absent: an empty List
    accepted('{"kind":"List","items":null}')
    accepted("apiVersion: v1\nkind: List\n")
  end)
end)

describe("NUL characters", function()
  it("are refused in YAML strings as in JSON ones, wherever they are", function()
    refused(CLASS:gsub("gpu.example.com", '"gpu\\0.example.com"'), "line 4:9: yaml: a NUL character (\\0) at byte 3")
    refused(CLASS .. '  labels: {"a\\0b": c}\n', "yaml: a NUL character")
    refused(CLASS .. "  labels: {a: \"x\\0\"}\n", "yaml: a NUL character")
    refused(CLASS .. "  labels: {a: \"x\\x00\"}\n", "yaml: a NUL character")
    refused('{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"a\\u0000b"}}',
      "json: a NUL character (\\u0000) in a string: not allowed in a manifest")
    -- the name is never read as the part before the NUL
    local g = core.graph()
    assert.is_false((pcall(g.apply, g, CLASS:gsub("name: gpu.example.com", 'name: "ok\\0"'))))
    assert.is_nil(g:class("ok"))
  end)
end)

describe("error messages", function()
  it("never show a value cut short: long values are described instead", function()
    local long = string.rep("a", 300)
    local err = refused(CLASS:gsub("gpu.example.com", long),
      "DeviceClass a string of 300 bytes: metadata.name: Invalid value: a string of 300 bytes: must be no more than 253 characters")
    assert.falsy(err:find("aaaa", 1, true), err)
    -- a value that fits is shown whole, with Go's escapes
    refused(CLASS:gsub("gpu.example.com", '"bad\\tname"'), 'Invalid value: "bad\\tname"')
    -- a long CEL expression that does not compile
    local expr = "device.driver == '" .. string.rep("x", 5000) .. "' &&"
    refused(CLASS .. "spec:\n  selectors:\n  - cel:\n      expression: \"" .. expr .. "\"\n",
      "spec.selectors[0].cel.expression: Invalid value: a string of " .. #expr .. " bytes")
    -- a long map key in a path
    local key = string.rep("k", 400)
    err = refused(CLASS .. "  labels:\n    " .. key .. ": v\n", "metadata.labels[a string of 400 bytes]")
    assert.falsy(err:find("kkkk", 1, true), err)
  end)

  it("quote map keys in paths as Go's %q does, whether a key needs escapes or not", function()
    refused(CLASS .. "  labels:\n    'a\"b\\c': v\n    \"ok/x y\": v\n",
      'metadata.labels["a\\"b\\\\c"]: Invalid value', 'metadata.labels["ok/x y"]: Invalid value')
    refused('{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"g","labels":{"a\\tb\\u007f":"v"}}}',
      'metadata.labels["a\\tb\\x7f"]: Invalid value')
  end)

  it("show whole messages and count the ones that do not fit", function()
    local devs = {}
    for i = 1, 30 do
      devs[#devs + 1] = string.format("  - name: %s%02d", string.rep("X", 200), i)
    end
    local err = refused(string.format([[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
%s
]], table.concat(devs, "\n")), "more errors)")
    assert.is_true(#err < 2048)
    -- every message shown is complete: it ends with the detail
    local shown = 0
    for part in (err:match('ResourceSlice "s": (.*) %(and %d+ more errors%)$') .. "; "):gmatch("(.-); ") do
      shown = shown + 1
      assert.truthy(part:find("must be no more than 63 characters$") or part:find("RFC 1123", 1, true), part)
    end
    assert.is_true(shown >= 1)
    local more = tonumber(err:match("%(and (%d+) more errors%)$"))
    assert.is_true(more >= 1)
  end)
end)
