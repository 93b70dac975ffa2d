-- base_doc_spec.lua - the manifest reader (engine/base/doc.c, doc_yaml.c)
-- and the YAML writer (yaml_emit.c), through draengine.core.
local core = require "draengine.core"
local H = require "support.helper"

local FIX = H.root .. "/spec/fixtures/base"

local function names(docs)
  local out = {}
  for i, d in ipairs(docs) do out[i] = d.object.metadata and d.object.metadata.name or "?" end
  return out
end

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

describe("document loader", function()
  it("reads several YAML documents, skipping empty ones, with their origin", function()
    local docs = core.load_docs(FIX .. "/multi.yaml")
    assert.are.equal(2, #docs)
    assert.are.equal("DeviceClass", docs[1].object.kind)
    assert.are.equal(1, docs[1].doc)
    assert.are.equal(2, docs[2].doc)
    assert.is_nil(docs[2].item)
    assert.are.equal(FIX .. "/multi.yaml", docs[2].file)
    local dev = docs[2].object.spec.devices[1]
    assert.are.equal("A100", dev.attributes.model.string)
    assert.are.equal(0, dev.attributes.index.int)
    assert.are.equal(math.type(dev.attributes.index.int), "integer")
    assert.are.equal("1.2.3", dev.attributes.driverVersion.version)
    assert.are.equal("80Gi", dev.capacity.memory.value)
    assert.are.equal(8, dev.capacity.cores.value)             -- a YAML int stays a number
    assert.are.equal("8", tostring(core.quantity(dev.capacity.cores.value)))
  end)

  it("reads directories recursively in sorted byte order, manifests only", function()
    local docs = core.load_docs(FIX .. "/tree")
    assert.are.same({ "a-json", "a-z", "b1", "b2", "c1", "c2" }, names(docs))
    assert.are.equal(FIX .. "/tree/sub/c.yml", docs[5].file)
    assert.are.equal(0, docs[5].item)
    assert.are.equal(1, docs[6].item)
    assert.are.equal(3, docs[4].doc)                         -- the empty document still counts
  end)

  it("splits JSON Lists and concatenated JSON values", function()
    local text = '{"kind":"List","apiVersion":"v1","items":[{"n":1},{"n":2}]}\n'
      .. '{"n":3}  {"items":[{"n":5}],"kind":"PodList","metadata":{}}\n{"kind":"List"}'
    local docs = core.load_text(text, "s.json")
    assert.are.equal(4, #docs)
    assert.are.same({ 1, 2, 3, 5 }, { docs[1].object.n, docs[2].object.n, docs[3].object.n, docs[4].object.n })
    assert.are.same({ 1, 1, 2, 3 }, { docs[1].doc, docs[2].doc, docs[3].doc, docs[4].doc })
    assert.are.same({ 0, 1 }, { docs[1].item, docs[2].item })
    assert.is_nil(docs[3].item)
    -- an object that only has "items" but is not a List stays whole
    local whole = core.load_text('{"kind":"Thing","items":[1,2]}', "t.json")
    assert.are.equal(1, #whole)
    assert.are.equal(2, #whole[1].object.items)
  end)

  it("streams a large JSON List item by item", function()
    local parts = { '{"apiVersion":"v1","items":[' }
    local n = 20000
    for i = 1, n do
      parts[#parts + 1] = string.format('%s{"kind":"ResourceSlice","metadata":{"name":"s-%d"},"spec":{"devices":[{"name":"d"}]}}',
        i > 1 and "," or "", i)
    end
    parts[#parts + 1] = '],"kind":"List","metadata":{"resourceVersion":"7"}}'
    local docs = core.load_text(table.concat(parts), "big.json")
    assert.are.equal(n, #docs)
    assert.are.equal("s-1", docs[1].object.metadata.name)
    assert.are.equal("s-" .. n, docs[n].object.metadata.name)
    assert.are.equal(n - 1, docs[n].item)
  end)

  it("reads stdin for '-'", function()
    local script = H.write_temp(
      'local c = require "draengine.core"; local d = c.load_docs("-");'
      .. ' io.write(#d, " ", d[1].file, " ", d[2].object.metadata.name)', ".lua")
    local input = H.write_temp("kind: A\nmetadata: {name: one}\n---\nkind: B\nmetadata: {name: two}\n")
    local p = io.popen("lua5.4 " .. H.shell_quote(script) .. " < " .. H.shell_quote(input) .. " 2>&1")
    local out = p:read("a")
    p:close()
    os.remove(script)
    os.remove(input)
    assert.are.equal("2 <stdin> two", out)
  end)

  it("names file, document and line:column in syntax errors", function()
    local err = err_of(core.load_docs, FIX .. "/broken.yaml")
    assert.truthy(err:find(FIX .. "/broken.yaml: document 2: line 10:", 1, true), err)
    assert.truthy(err:find("mapping values are not allowed", 1, true), err)
    local jerr = err_of(core.load_docs, FIX .. "/badlist.json")
    assert.truthy(jerr:find("badlist.json: document 1: line 3:", 1, true), jerr)
    local cerr = err_of(core.load_text, '{"a":1}\n{"b":2,}\n', "c.json")
    assert.truthy(cerr:find("c.json: document 2: line 2:8: json:", 1, true), cerr)
  end)

  it("refuses documents that are not objects, naming file and index", function()
    local err = err_of(core.load_docs, FIX .. "/notobject.yaml")
    assert.are.equal(FIX .. "/notobject.yaml: document 2: expected an object, got a list", err)
    assert.are.equal("x.yaml: document 1: items[1]: expected an object, got a number",
      err_of(core.load_text, "kind: List\nitems:\n- a: 1\n- 5\n", "x.yaml"))
    assert.are.equal("s.json: document 2: expected an object, got a string",
      err_of(core.load_text, '{"a":1} "x"', "s.json"))
  end)

  it("reads a ConfigMap volume once, skipping hidden entries", function()
    -- kubelet's layout: x.yaml -> ..data/x.yaml, ..data -> ..<timestamp>/
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/..2026_12_01_00_00_00.1"))
    local f = assert(io.open(dir .. "/..2026_12_01_00_00_00.1/a.yaml", "w"))
    f:write("kind: A\nmetadata: {name: one}\n")
    f:close()
    assert(os.execute("ln -s ..2026_12_01_00_00_00.1 " .. dir .. "/..data && ln -s ..data/a.yaml "
      .. dir .. "/a.yaml && touch " .. dir .. "/.a.yaml.swp"))
    local docs = core.load_docs(dir)
    os.execute("rm -rf " .. dir)
    assert.are.equal(1, #docs)
    assert.are.equal(dir .. "/a.yaml", docs[1].file)
  end)

  it("reports missing files", function()
    local err = err_of(core.load_docs, FIX .. "/does-not-exist.yaml")
    assert.truthy(err:find("does-not-exist.yaml: No such file or directory", 1, true), err)
  end)

  it("reads flow-style YAML that starts like JSON", function()
    local docs = core.load_text("{a: 1, b: [x, y]}\n", "flow")
    assert.are.equal(1, docs[1].object.a)
    -- YAML 1.1: a plain y is a boolean
    assert.are.same({ "x", true }, { docs[1].object.b[1], docs[1].object.b[2] })
  end)
end)

describe("YAML 1.1 scalars (sigs.k8s.io/yaml)", function()
  local function one(text) return core.yaml_decode(text)[1] end

  it("resolves plain scalars like go-yaml v2", function()
    local v = one([[
a: yes
b: No
c: on
d: OFF
e: y
f: True
g: tRUE
h: ~
i: null
j:
k: 0x1F
l: 0o17
m: 010
n2: 08
o: 1_000
p: -0b101
q: +12
r: 1.5
s: .5
t: 1e3
u: 2006-01-02
v: 1:20
w: 18446744073709551615
x: 123456789012345678901234567890
z: 1e400
]])
    assert.are.equal(true, v.a); assert.are.equal(false, v.b)
    assert.are.equal(true, v.c); assert.are.equal(false, v.d)
    assert.are.equal(true, v.e); assert.are.equal(true, v.f)
    assert.are.equal("tRUE", v.g)
    assert.are.equal(core.null, v.h); assert.are.equal(core.null, v.i); assert.are.equal(core.null, v.j)
    assert.are.equal(31, v.k); assert.are.equal(15, v.l); assert.are.equal(8, v.m)
    assert.are.equal(8.0, v.n2); assert.are.equal("float", math.type(v.n2))
    assert.are.equal(1000, v.o); assert.are.equal(-5, v.p); assert.are.equal(12, v.q)
    assert.are.equal(1.5, v.r); assert.are.equal(0.5, v.s)
    assert.are.equal(1000.0, v.t); assert.are.equal("float", math.type(v.t))
    assert.are.equal("2006-01-02", v.u); assert.are.equal("1:20", v.v)
    -- beyond int64: kept as a real, never a crash
    assert.are.equal("float", math.type(v.w)); assert.are.equal(18446744073709551615.0, v.w)
    assert.are.equal(1.2345678901234568e29, v.x)
    assert.are.equal("1e400", v.z)                           -- overflowing float stays text
  end)

  it("keeps quoted scalars as strings and honours tags", function()
    local v = one("a: 'yes'\nb: \"1\"\nc: !!str 12\nd: !!float 3\ne: !!int \"7\"\nf: !custom 5\ng: !!bool 'true'\n")
    assert.are.equal("yes", v.a); assert.are.equal("1", v.b); assert.are.equal("12", v.c)
    assert.are.equal(3.0, v.d); assert.are.equal("float", math.type(v.d))
    assert.are.equal(7, v.e); assert.are.equal("5", v.f); assert.are.equal(true, v.g)
    assert.are.equal("<string>: document 1: line 1:4: yaml: cannot decode !!str `abc` as a !!int",
      err_of(core.yaml_decode, "a: !!int abc\n"))
  end)

  it("turns keys into strings like sigs.k8s.io/yaml", function()
    local v = one("1: a\ntrue: b\n1.5: c\nn: d\n")
    assert.are.equal("a", v["1"]); assert.are.equal("b", v["true"])
    assert.are.equal("c", v["1.5"]); assert.are.equal("d", v["false"])
    assert.truthy(err_of(core.yaml_decode, "~: a\n"):find("unsupported map key", 1, true))
  end)

  it("refuses .inf and .nan, which JSON cannot carry", function()
    assert.truthy(err_of(core.yaml_decode, "a: .inf\n"):find("json: unsupported value: +Inf", 1, true))
    assert.truthy(err_of(core.yaml_decode, "a: .NaN\n"):find("json: unsupported value: NaN", 1, true))
  end)
end)

describe("YAML anchors and aliases", function()
  it("expands aliases and merge keys", function()
    local v = core.yaml_decode("base: &b {x: 1, z: 2}\nlist: &l [1, 2]\nd:\n  <<: *b\n  z: 3\n  l: *l\n")[1]
    assert.are.same({ x = 1, z = 3, l = { 1, 2 } }, setmetatable(v.d, nil) and {
      x = v.d.x, z = v.d.z, l = { v.d.l[1], v.d.l[2] } })
    assert.are.equal(2, v.base.z)
    assert.are.equal("<string>: document 1: line 1:4: yaml: unknown anchor 'nope' referenced",
      err_of(core.yaml_decode, "a: *nope\n"))
  end)

  it("refuses a billion-laughs document instead of expanding it", function()
    local lines = { 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]' }
    local prev = "a"
    for _, n in ipairs({ "b", "c", "d", "e", "f", "g", "h", "i" }) do
      local refs = {}
      for k = 1, 9 do refs[k] = "*" .. prev end
      lines[#lines + 1] = n .. ": &" .. n .. " [" .. table.concat(refs, ",") .. "]"
      prev = n
    end
    local err = err_of(core.yaml_decode, table.concat(lines, "\n") .. "\n")
    assert.truthy(err:find("document contains excessive aliasing", 1, true), err)
  end)
end)

describe("YAML writer", function()
  local function roundtrip(v)
    local text = core.yaml_encode(v)
    local back = core.yaml_decode(text)[1]
    return text, back
  end

  it("writes kubectl-style block YAML with sorted keys", function()
    local obj = core.json_decode('{"kind":"X","metadata":{"name":"n","labels":{}},'
      .. '"spec":{"devices":[{"name":"a","attributes":{"x":{"int":1}}},{"name":"b"}],"list":[[1,2],[]]}}')
    assert.are.equal([[
kind: X
metadata:
  labels: {}
  name: 'n'
spec:
  devices:
  - attributes:
      x:
        int: 1
    name: a
  - name: b
  list:
  - - 1
    - 2
  - []
]], core.yaml_encode(obj))
  end)

  it("quotes strings that would not read back as themselves", function()
    local strs = { "true", "yes", "n", "1", "0x1F", "1_000", "1.5", "", "  lead", "trail ", "a: b",
      "x #y", "#c", "-dash", "it's", "multi\nline", "tab\there", "~", "null", "2006-01-02", "1:20",
      "ok text", "<<", "*star", "&amp", "!bang", "%pct", "@at", "`tick", "{", "[", "]", "---", "...x",
      "key:", "ünïcode", "\"dq\"", "back\\slash", "ctl\1x" }
    local arr = setmetatable({}, core.json_array_mt)
    for i, s in ipairs(strs) do arr[i] = s end
    local text, back = roundtrip({ s = arr })
    for i, s in ipairs(strs) do
      assert.are.equal(s, back.s[i], "round trip of " .. string.format("%q", s) .. " via\n" .. text)
    end
    assert.truthy(text:find("\n- ok text\n", 1, true))       -- plain when safe
    assert.truthy(text:find("\n- 'true'\n", 1, true))
    assert.truthy(text:find('\n- "multi\\nline"\n', 1, true))
  end)

  it("round-trips numbers, booleans, null and empty collections with their types", function()
    local v = core.json_decode('{"i":7,"neg":-3,"r":1.0,"r2":0.1,"big":1e300,"t":true,"f":false,"z":null,'
      .. '"eo":{},"ea":[],"nested":[{"a":[]}]}')
    local text, back = roundtrip(v)
    assert.are.equal(7, back.i); assert.are.equal("integer", math.type(back.i))
    assert.are.equal(-3, back.neg)
    assert.are.equal(1.0, back.r); assert.are.equal("float", math.type(back.r))
    assert.are.equal(0.1, back.r2); assert.are.equal(1e300, back.big)
    assert.are.equal(true, back.t); assert.are.equal(false, back.f); assert.are.equal(core.null, back.z)
    assert.are.equal(core.json_object_mt, getmetatable(back.eo))
    assert.are.equal(core.json_array_mt, getmetatable(back.ea))
    -- (jansson prints reals with 17 significant digits)
    assert.are.equal('{"big":1.0000000000000001e300,"ea":[],"eo":{},"f":false,"i":7,"neg":-3,'
      .. '"nested":[{"a":[]}],"r":1.0,"r2":0.10000000000000001,"t":true,"z":null}', core.json_encode(back))
    assert.truthy(text:find("r: 1.0\n", 1, true))
  end)

  it("writes a scalar document on its own", function()
    assert.are.equal("'true'\n", core.yaml_encode("true"))
    assert.are.equal("5\n", core.yaml_encode(5))
  end)
end)

describe("JSON binding", function()
  it("decodes and encodes deterministically", function()
    local v = core.json_decode('{"b":[1,2,{"c":null}],"a":"x"}')
    assert.are.equal(core.null, v.b[3].c)
    assert.are.equal('{"a":"x","b":[1,2,{"c":null}]}', core.json_encode(v))
    assert.are.equal('{"a":1,"b":{"c":[true]}}', core.json_encode({ b = { c = { true } }, a = 1 }))
    assert.are.equal("{}", core.json_encode({}))
    assert.are.equal("[]", core.json_encode(setmetatable({}, core.json_array_mt)))
    assert.are.equal('"80Gi"', core.json_encode(core.quantity("80Gi")))
    assert.truthy(core.json_encode({ a = { b = 1 } }, { pretty = true }):find('\n  "a": {\n', 1, true))
  end)

  it("reports what cannot be encoded and where", function()
    local cyc = {}
    cyc.self = cyc
    assert.truthy(err_of(core.json_encode, cyc):find("nested deeper than 200", 1, true))
    assert.are.equal("cannot encode function at $.a[1]",
      err_of(core.json_encode, { a = { 1, print } }))
    assert.are.equal("cannot encode NaN or infinity at $.x", err_of(core.json_encode, { x = 0 / 0 }))
    assert.truthy(err_of(core.json_decode, '{"a":'):find("json: line 1:", 1, true))
  end)
end)
