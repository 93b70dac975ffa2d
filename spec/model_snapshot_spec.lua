-- model_snapshot_spec.lua - JSON List snapshots: the fast path (slices
-- decoded straight from text) must give exactly what jansson + the full
-- decoder give, errors included; and it must really be used.
local core = require "draengine.core"
local H = require "support.helper"

local function write_json(value)
  return H.write_temp(core.json_encode(value), ".json")
end

local function list(items)
  return { apiVersion = "v1", kind = "List", items = items }
end

-- Everything a device says, without the fields that depend on load history.
local function snapshot(g)
  local out = {}
  for _, d in ipairs(g:devices { full = true }) do
    d.id, d.gen = nil, nil
    out[#out + 1] = d
  end
  local pools = g:pools()
  for _, p in ipairs(pools) do p.gen, p.id = nil, nil end
  return { devices = out, pools = pools, nodes = g:nodes(), shared = g:shared_slices() }
end

local function both(path)
  local fast = core.graph()
  local slow = core.graph { no_fast_path = true }
  local okf, ef = pcall(fast.load, fast, path)
  local oks, es = pcall(slow.load, slow, path)
  return fast, slow, okf, ef, oks, es
end

local function gpu(i, extra)
  local d = {
    name = "gpu-" .. i,
    attributes = { model = { string = "H100" }, index = { int = i }, ["resource.kubernetes.io/pcieRoot"] = { string = "pci0000:" .. i },
                   driverVersion = { version = "580.95.5" }, mig = { bool = false } },
    capacity = { memory = { value = "80Gi" } },
  }
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

local function rs(name, node, devices, extra)
  local spec = { driver = "gpu.example.com", nodeName = node,
                 pool = { name = node, generation = 1, resourceSliceCount = 1 }, devices = devices }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = name }, spec = spec }
end

describe("JSON snapshot fast path", function()
  it("decodes common slices itself and agrees with the full decoder", function()
    local items = {}
    for n = 1, 20 do items[#items + 1] = rs("s" .. n, "node-" .. n, { gpu(0), gpu(1), gpu(2) }) end
    local path = write_json(list(items))
    local fast, slow, okf, _, oks = both(path)
    os.remove(path)
    assert.is_true(okf and oks)
    assert.are.equal(20, fast:stats().fast_path_slices)
    assert.are.equal(0, slow:stats().fast_path_slices)
    assert.are.same(snapshot(slow), snapshot(fast))
  end)

  it("hands unusual shapes to the full decoder, with the same result", function()
    local items = {
      rs("plain", "n1", { gpu(0) }),
      rs("list-attr", "n2", { gpu(0, { attributes = { roots = { strings = { "a", "b" } } } }) }),
      rs("policy", "n3", { gpu(0, { allowMultipleAllocations = true,
        capacity = { bw = { value = "10Gi", requestPolicy = { default = "1Gi", validRange = { min = "1Gi", step = "1Gi" } } } } }) }),
      rs("tainted", "n4", { gpu(0, { taints = { { key = "k", effect = "NoSchedule" } } }) }),
      rs("escaped", "n5", { gpu(0, { attributes = { note = { string = "quote \" inside" }, path = { string = "C:\\" } } }) }),
      rs("unicode", "n6", { gpu(0, { attributes = { note = { string = "Gr\u{00e4}fik" } } }) }),
      rs("selector", "n7", { gpu(0) }, { nodeName = core.null,
        nodeSelector = { nodeSelectorTerms = { { matchExpressions = { { key = "rack", operator = "In", values = { "r1" } } } } } } }),
      rs("labels", "n8", { gpu(0) }),
      { apiVersion = "resource.k8s.io/v1beta1", kind = "ResourceSlice", metadata = { name = "beta" },
        spec = { driver = "gpu.example.com", nodeName = "n9", pool = { name = "n9", generation = 0, resourceSliceCount = 1 },
                 devices = { { name = "gpu-0", basic = { attributes = { model = { string = "A100" } } } } } } },
      { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu" },
        spec = { selectors = { { cel = { expression = "device.driver == 'gpu.example.com'" } } } } },
    }
    items[8].metadata.labels = { team = "a" }
    items[8].metadata.creationTimestamp = "2026-03-10T12:00:00Z"
    local path = write_json(list(items))
    local fast, slow, okf, ef, oks, es = both(path)
    os.remove(path)
    assert.is_true(okf, ef)
    assert.is_true(oks, es)
    -- plain, list-attr, labels: fast; everything else went through jansson
    assert.are.equal(3, fast:stats().fast_path_slices)
    assert.are.same(snapshot(slow), snapshot(fast))
    assert.are.equal("Gr\u{00e4}fik", fast:device("gpu.example.com", "n6", "gpu-0").attributes["gpu.example.com/note"])
    assert.are.equal("C:\\", fast:device("gpu.example.com", "n5", "gpu-0").attributes["gpu.example.com/path"])
    assert.is_not_nil(fast:class("gpu"))
  end)

  it("decodes devices that consume shared counters itself, as the full decoder does", function()
    local function part(i, set, extra)
      local d = gpu(i, { consumesCounters = { { counterSet = set, counters = { memory = { value = "10Gi" }, sm = { value = tostring(i + 1) } } } } })
      for k, v in pairs(extra or {}) do d[k] = v end
      return d
    end
    local items = {
      { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "ctr" },
        spec = { driver = "gpu.example.com", nodeName = "n1", pool = { name = "n1", generation = 1, resourceSliceCount = 2 },
                 sharedCounters = { { name = "gpu-0-set", counters = { memory = { value = "80Gi" }, sm = { value = "8" } } } } } },
      rs("parts", "n1", { part(0, "gpu-0-set"), part(1, "gpu-0-set") }, { pool = { name = "n1", generation = 1, resourceSliceCount = 2 } }),
      rs("two-sets", "n2", { gpu(0, { consumesCounters = {
        { counterSet = "a", counters = { x = { value = "1" } } }, { counterSet = "b", counters = { y = { value = "2" } } } } }) }),
      rs("groups", "n3", { gpu(0, { consumesCounters = {
        { counterSet = "a", counters = { x = { value = "1" } }, compatibilityGroups = { "g1" } } } }) }),
    }
    local path = write_json(list(items))
    local fast, slow, okf, ef, oks, es = both(path)
    os.remove(path)
    assert.is_true(okf, ef)
    assert.is_true(oks, es)
    -- ctr, parts and two-sets: fast; compatibilityGroups: jansson
    assert.are.equal(3, fast:stats().fast_path_slices)
    assert.are.same(snapshot(slow), snapshot(fast))
    local d = fast:device("gpu.example.com", "n1", "gpu-1", { full = true })
    assert.is_not_nil(d)
    -- the simulated cluster (MIG and MI300X partitions consume counters)
    local rc, text = H.run({ "sim", "--nodes", "40", "-o", "json" })
    assert.are.equal(0, rc)
    path = H.write_temp(text, ".json")
    fast, slow, okf, ef, oks, es = both(path)
    os.remove(path)
    assert.is_true(okf, ef)
    assert.is_true(oks, es)
    assert.are.same(snapshot(slow), snapshot(fast))
    local nslices, nnodes = 0, 0
    for _, x in ipairs(core.json_decode(text).items) do
      if x.kind == "ResourceSlice" then nslices = nslices + 1 end
      if x.kind == "Node" then nnodes = nnodes + 1 end
    end
    assert.are.equal(nslices, fast:stats().fast_path_slices)
    assert.are.equal(nnodes, fast:stats().fast_path_nodes)
    assert.is_true(nnodes >= 40)
  end)

  it("decodes Nodes itself and agrees with the full decoder, errors included", function()
    local function node(name, extra)
      local n = { apiVersion = "v1", kind = "Node",
                  metadata = { name = name, uid = "u-" .. name, labels = { ["kubernetes.io/hostname"] = name, zone = "a" } },
                  status = { capacity = { cpu = "224", memory = "2048Gi", pods = "110" },
                             allocatable = { cpu = "223500m", memory = "1984Gi", pods = "110" } } }
      for k, v in pairs(extra or {}) do n[k] = v end
      return n
    end
    local function details(g)
      local out = {}
      for _, name in ipairs(g:nodes()) do out[name] = g:node(name) or false end
      return out
    end
    local fast_cases = {
      node("plain"),
      node("capacity-only", { status = { capacity = { cpu = "8", ["nvidia.com/gpu"] = "4" } } }),
      node("tainted", { spec = { unschedulable = true, podCIDR = "10.0.0.0/24", podCIDRs = { "10.0.0.0/24" },
                                 taints = { { key = "gpu", value = "true", effect = "NoSchedule", timeAdded = "2026-01-01T00:00:00Z" },
                                            { key = "maint", effect = "NoExecute" } } } }),
      node("kubelet-status", { status = { allocatable = { cpu = "4" }, capacity = { cpu = "4" },
        conditions = { { type = "Ready", status = "True", lastHeartbeatTime = core.null } },
        addresses = { { type = "InternalIP", address = "10.0.0.1" } },
        nodeInfo = { kubeletVersion = "v1.37.0", architecture = "amd64" }, daemonEndpoints = { kubeletEndpoint = { Port = 10250 } },
        images = { { names = { "registry.k8s.io/pause:3.10" }, sizeBytes = 320368 } } } }),
      node("owned", { metadata = { name = "owned", resourceVersion = "42", generation = 3, creationTimestamp = "2026-03-10T12:00:00Z",
        ownerReferences = { { apiVersion = "v1", kind = "Thing", name = "t", uid = "x", controller = true } } } }),
      node("empty-allocatable", { status = { allocatable = {}, capacity = { cpu = "4" } } }),
    }
    local slow_cases = {
      node("annotated", { metadata = { name = "annotated", annotations = { a = "b" } } }),
      node("features", { status = { allocatable = { cpu = "4" }, declaredFeatures = { "GuaranteedQoSPodCPUResize" } } }),
      node("escaped", { spec = { providerID = "aws:///us-east-1a/i-\"0\"" } }),
      node("real", { status = { allocatable = { cpu = "1.5" }, capacity = { cpu = 2.5 } } }),
      node("numeric", { status = { allocatable = { cpu = 4 } } }),
      node("extra", { spec = { configSource = { x = 1.5 } } }),
    }
    local items = {}
    for _, n in ipairs(fast_cases) do items[#items + 1] = n end
    for _, n in ipairs(slow_cases) do items[#items + 1] = n end
    local path = write_json(list(items))
    local fast, slow, okf, ef, oks, es = both(path)
    assert.is_true(okf, ef)
    assert.is_true(oks, es)
    assert.are.equal(#fast_cases, fast:stats().fast_path_nodes)
    assert.are.equal(0, slow:stats().fast_path_nodes)
    assert.are.same(details(slow), details(fast))
    assert.are.same({ "cpu=223500m", "memory=1984Gi", "pods=110" }, fast:node("plain").allocatable)
    assert.are.same({ "gpu=true:NoSchedule", "maint=:NoExecute" }, fast:node("tainted").taints)
    assert.is_true(fast:node("tainted").unschedulable)
    assert.are.same({ "cpu=8", "nvidia.com/gpu=4" }, fast:node("capacity-only").allocatable)
    assert.are.same({}, fast:node("empty-allocatable").allocatable)
    -- allocate reads the same Nodes (dg_list_each) and schedules on them
    local rc, _, err = H.run({ "allocate", "-f", path, "-o", "table" })
    assert.are.equal(0, rc, err)
    os.remove(path)
    -- the same Node twice: identical copies are one (also when only one of
    -- them could take the fast path: an escape sends the second to jansson,
    -- and the two structural hashes must agree), different ones refused
    path = write_json(list({ node("n1"), node("n1") }))
    fast, slow, okf, ef, oks, es = both(path)
    assert.is_true(okf and oks)
    assert.are.equal(1, fast:stats().fast_path_nodes)
    os.remove(path)
    local twice = core.json_encode(list({ node("n1"), node("n1") }))
    local at = twice:find('"u-n1"', 1, true)
    at = twice:find('"u-n1"', at + 1, true)
    twice = twice:sub(1, at - 1) .. '"u-\\u006e1"' .. twice:sub(at + 6)
    path = H.write_temp(twice, ".json")
    fast, slow, okf, ef, oks, es = both(path)
    local rc3, _, err3 = H.run({ "allocate", "-f", path, "--validate", "strict" })
    os.remove(path)
    assert.is_true(okf, ef)
    assert.is_true(oks, es)
    assert.are.equal(1, fast:stats().fast_path_nodes)
    assert.are.equal(0, rc3, err3)
    path = write_json(list({ node("n1"), node("n1", { spec = { unschedulable = true } }) }))
    fast, slow, okf, ef, oks, es = both(path)
    local rc2, _, err2 = H.run({ "allocate", "-f", path, "--validate", "strict" })
    os.remove(path)
    assert.is_false(okf)
    assert.are.equal(es, ef)
    assert.truthy(ef:find('items[1]: Node "n1": AlreadyExists', 1, true), ef)
    assert.are.equal(2, rc2)
    assert.truthy(err2:find('Node "n1" is defined twice with different content', 1, true), err2)
    -- invalid Nodes: the fast path leaves them to the full decoder, which words the error
    for _, bad in ipairs({
      node("Bad_Name"),
      node("badlabel", { metadata = { name = "badlabel", labels = { ["-x"] = "y" } } }),
      node("badqty", { status = { allocatable = { cpu = "lots" } } }),
      node("dupkey"),
    }) do
      local text = core.json_encode(list({ node("ok"), bad }))
      if bad.metadata.name == "dupkey" then text = text:gsub('"status":{', '"status":{"capacity":{},', 1) end
      path = H.write_temp(text, ".json")
      fast, slow, okf, ef, oks, es = both(path)
      local rca, _, erra = H.run({ "allocate", "-f", path, "--validate", "strict" })
      os.remove(path)
      assert.is_false(okf, bad.metadata.name)
      assert.are.equal(es, ef)
      assert.truthy(ef:find(path .. ": document 1", 1, true), ef)
      assert.are.equal(2, rca)
      assert.truthy(erra:find(path, 1, true), erra)
    end
  end)

  it("agrees with the full decoder however attribute, capacity and counter values are spelled", function()
    -- devices repeat the keys of the one before (the fast path matches them as
    -- text), then differ: spacing, extra members, a key twice, other kinds
    local function dev(i, attrs, cap, ctr)
      return '{"name":"d' .. i .. '","attributes":' .. attrs .. ',"capacity":' .. cap ..
             (ctr and (',"consumesCounters":[{"counterSet":"s","counters":' .. ctr .. '}]') or '') .. '}'
    end
    local good_a = '{"model":{"string":"H100"},"index":{"int":0},"mig":{"bool":false},"driverVersion":{"version":"1.2.3"}}'
    local good_c = '{"memory":{"value":"80Gi"}}'
    local good_k = '{"mem":{"value":"10Gi"},"sm":{"value":"1"}}'
    local variants = {
      { good_a, good_c, good_k },
      { '{"model":{ "string" : "H100" },"index":{"int": 7 },"mig":{"bool":true },"driverVersion":{"version":"1.2.4"}}', good_c, good_k },
      { '{"model":{"string":"H100","int":1},"index":{"int":0}}', good_c },
      { '{"model":{"string":"H100"},"model":{"string":"A100"}}', good_c },
      { '{"model":{"string":"H100"},"index":{"int":0},"model":{"int":1}}', good_c },
      { '{"model":{"int":1.5}}', good_c },
      { '{"model":{"version":"x.y"}}', good_c },
      { '{"model":{"string":"H100"},"index":{"ints":[1,2]}}', good_c },
      { good_a, '{"memory":{"value":"80Gi","x":1}}' },
      { good_a, '{"memory":{ "value" : "80Gi" }}' },
      { good_a, '{"memory":{"value":"lots"}}' },
      { good_a, '{"memory":{"value":"80Gi"},"memory":{"value":"80Gi"}}' },
      { good_a, good_c, '{"mem":{"value":"10Gi"},"sm":{"value":"1"},"mem":{"value":"1"}}' },
      { good_a, good_c, '{"mem":{"value":"10Gi" },"sm":{"value":"2","value":"2"}}' },
      { good_a, good_c, '{"sm":{"value":"1"},"mem":{"value":"10Gi"}}' },
      { good_a, good_c, '{"mem":{"value":"11Gi"},"sm":{"value":"x"}}' },
    }
    local function slice(name, devs)
      return '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"' .. name .. '"},' ..
             '"spec":{"driver":"gpu.example.com","nodeName":"n-' .. name .. '","pool":{"name":"n-' .. name ..
             '","generation":1,"resourceSliceCount":1},"devices":[' .. table.concat(devs, ",") .. ']}}'
    end
    for i, v in ipairs(variants) do
      -- a good device first (its keys are what the next one is matched against)
      local text = '{"apiVersion":"v1","kind":"List","items":[' ..
                   slice("a" .. i, { dev(0, good_a, good_c, good_k), dev(1, v[1], v[2], v[3]) }) .. ']}'
      local path = H.write_temp(text, ".json")
      local fast, slow, okf, ef, oks, es = both(path)
      local rc, _, err = H.run({ "allocate", "-f", path, "--validate", "strict" })
      os.remove(path)
      assert.are.equal(oks, okf, "variant " .. i .. ": " .. tostring(ef) .. " | " .. tostring(es))
      if oks then
        assert.are.same(snapshot(slow), snapshot(fast), "variant " .. i)
        assert.are.equal(0, rc, err)
      else
        assert.are.equal(es, ef, "variant " .. i)
        assert.are.equal(2, rc, "variant " .. i)
      end
      if i <= 2 then assert.are.equal(1, fast:stats().fast_path_slices, "variant " .. i) end
    end
  end)

  it("refuses invalid sharedCounters exactly as the full decoder does", function()
    local function ctr(sets, extra)
      local spec = { driver = "gpu.example.com", nodeName = "n1", pool = { name = "n1", generation = 1, resourceSliceCount = 1 },
                     sharedCounters = sets }
      for k, v in pairs(extra or {}) do spec[k] = v end
      return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "ctr" }, spec = spec }
    end
    local many = {}
    for i = 1, 9 do many[i] = { name = "s" .. i, counters = { x = { value = "1" } } } end
    for _, item in ipairs({
      ctr({ { name = "Bad_Name", counters = { x = { value = "1" } } } }),
      ctr({ { name = "a", counters = { x = { value = "1" } } }, { name = "a", counters = { y = { value = "1" } } } }),
      ctr({ { name = "a", counters = {} } }),
      ctr({ { name = "a", counters = { x = { value = "lots" } } } }),
      ctr({ { counters = { x = { value = "1" } } } }),
      ctr(many),
      ctr({ { name = "a", counters = { x = { value = "1" } } } }, { devices = { gpu(0) } }),
    }) do
      local path = write_json(list({ item }))
      local _, _, okf, ef, oks, es = both(path)
      os.remove(path)
      assert.is_false(okf)
      assert.is_false(oks)
      assert.are.equal(es, ef)
    end
  end)

  it("refuses an invalid consumesCounters exactly as the full decoder does", function()
    for _, cc in ipairs({
      { { counterSet = "Bad_Name", counters = { x = { value = "1" } } } },
      { { counterSet = "a", counters = { x = { value = "1" } } }, { counterSet = "a", counters = { y = { value = "1" } } } },
      { { counterSet = "a", counters = {} } },
      { { counterSet = "a", counters = { x = { value = "lots" } } } },
      { { counterSet = "a", counters = { ["X_Y"] = { value = "1" } } } },
      { { counterSet = "a", counters = { x = { value = "1" } } }, { counterSet = "b", counters = { x = { value = "1" } } },
        { counterSet = "c", counters = { x = { value = "1" } } } },
    }) do
      local path = write_json(list({ rs("bad", "n1", { gpu(0, { consumesCounters = cc }) }) }))
      local _, _, okf, ef, oks, es = both(path)
      os.remove(path)
      assert.is_false(okf)
      assert.is_false(oks)
      assert.are.equal(es, ef)
    end
  end)

  it("reports an invalid slice exactly as the full decoder does", function()
    local bad = rs("bad", "n1", { gpu(0), gpu(0) }) -- duplicate device name
    local bad2 = rs("bad2", "n2", { gpu(0, { name = "GPU_0" }) })
    local path = write_json(list({ rs("ok", "n0", { gpu(0) }), bad, bad2 }))
    local fast, _, okf, ef, oks, es = both(path)
    assert.is_false(okf)
    assert.is_false(oks)
    assert.are.equal(es, ef)
    assert.truthy(ef:find(path .. ': document 1: items[1]: ResourceSlice "bad": spec.devices[1]: Duplicate value: "gpu-0"', 1, true), ef)
    -- with keep_going every invalid item is reported once
    local g = core.graph { keep_going = true }
    local ok, err = pcall(g.load, g, path)
    os.remove(path)
    assert.is_false(ok)
    assert.truthy(err:find('items[2]: ResourceSlice "bad2": spec.devices[0].name: Invalid value: "GPU_0"', 1, true), err)
    local _, n = err:gsub("\n", "")
    assert.are.equal(1, n)
    assert.are.equal(1, g:stats().slices)
    assert.is_not_nil(fast)
  end)

  it("falls back to the manifest reader on malformed JSON, loading nothing twice", function()
    local good = core.json_encode(rs("ok", "n0", { gpu(0) }))
    -- the List's brackets balance, so the fast path starts; item 1 is not JSON
    local text = '{"apiVersion":"v1","kind":"List","items":[' .. good .. ',{"kind": tru}]}'
    local path = H.write_temp(text, ".json")
    local fast, slow, okf, ef, oks, es = both(path)
    assert.is_false(okf)
    assert.is_false(oks)
    assert.are.equal(es, ef)
    assert.truthy(ef:find(path, 1, true))
    local g = core.graph { keep_going = true }
    assert.has_error(function() g:load(path) end)
    os.remove(path)
    assert.are.equal(1, g:stats().slices)
    assert.is_not_nil(fast)
    assert.is_not_nil(slow)
  end)

  it("walks a List whose kind comes before its items at once, and still reads what follows them", function()
    local a, b = core.json_encode(rs("a", "n1", { gpu(0) })), core.json_encode(rs("b", "n2", { gpu(1) }))
    local head = '{"apiVersion":"v1","kind":"List","items":[' .. a .. ',' .. b .. ']'
    local cases = {
      { head .. '}', true },
      { head .. ',"metadata":{"resourceVersion":"7"}}\n', true },
      { head .. '}' .. '\n' .. core.json_encode(rs("c", "n3", { gpu(2) })), true }, -- a second document
      { head .. ',"kind":"List"}', false },   -- a key twice, after the items
      { head .. ',"items":[]}', false },
      { head .. '} trailing', false },
      { head .. ',"metadata":{"x":tru}}', false },
      { head, false },                        -- the object never ends
      { '{"kind":"List","items":[]}', true },
      { '{"kind":"List","items":[],"kind":"List"}', false },
    }
    for i, c in ipairs(cases) do
      local path = H.write_temp(c[1], ".json")
      local fast, slow, okf, ef, oks, es = both(path)
      assert.are.equal(c[2], okf, "case " .. i .. ": " .. tostring(ef))
      assert.are.equal(oks, okf, "case " .. i)
      if okf then
        assert.are.same(snapshot(slow), snapshot(fast), "case " .. i)
      else
        assert.are.equal(es, ef, "case " .. i)
      end
      -- allocate reads the same file through its own loader (dg_list_each)
      local rc, _, err = H.run({ "allocate", "-f", path, "-o", "json" })
      local rc2, _, err2 = H.run({ "allocate", "-f", path, "-o", "json", "--validate", "strict" })
      os.remove(path)
      if c[2] then
        assert.are.equal(0, rc, err)
      else
        assert.are.equal(2, rc, "case " .. i)
        assert.truthy(err:find(path, 1, true), err)
      end
      assert.are.equal(rc, rc2)
      if i == 1 then assert.are.equal(2, fast:stats().fast_path_slices) end
    end
  end)

  it("accepts the same slice again but refuses a different one under the same name", function()
    local a = write_json(list({ rs("s", "n1", { gpu(0) }) }))
    local b = write_json(rs("s", "n1", { gpu(0) }))
    local c = write_json(rs("s", "n1", { gpu(1) }))
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. H.shell_quote(dir))
    os.execute("cp " .. H.shell_quote(a) .. " " .. H.shell_quote(dir .. "/a.json"))
    os.execute("cp " .. H.shell_quote(b) .. " " .. H.shell_quote(dir .. "/b.json"))
    local g = core.graph()
    g:load(dir)
    assert.are.equal(1, g:stats().fast_path_slices)
    os.execute("cp " .. H.shell_quote(c) .. " " .. H.shell_quote(dir .. "/c.json"))
    local g2 = core.graph()
    local ok, err = pcall(g2.load, g2, dir)
    os.execute("rm -rf " .. H.shell_quote(dir))
    os.remove(a); os.remove(b); os.remove(c)
    assert.is_false(ok)
    assert.truthy(err:find('c.json: document 1: ResourceSlice "s": AlreadyExists: defined differently in ' .. dir .. "/a.json: document 1: items[0]", 1, true), err)
  end)

  it("agrees with the full decoder on byte-mutated snapshots", function()
    local base = core.json_encode(list({ rs("a", "n1", { gpu(0), gpu(1) }), rs("b", "n2", { gpu(0) }) }))
    local chars = { '"', "\\", "{", "}", "[", "]", ",", ":", "0", "-", "a", " ", "\0", "\xc3", "e", "." }
    local seed = 7
    local mismatches = 0
    for i = 1, 250 do
      seed = (seed * 1103515245 + 12345) % 2147483648
      local pos = seed % #base + 1
      local c = chars[(seed // 7) % #chars + 1]
      local text = base:sub(1, pos - 1) .. c .. base:sub(pos + 1)
      local path = H.write_temp(text, ".json")
      local fast, slow, okf, ef, oks, es = both(path)
      os.remove(path)
      if okf ~= oks or (okf and not require("luassert.util").deepcompare(snapshot(slow), snapshot(fast), true))
         or (not okf and ef ~= es) then
        mismatches = mismatches + 1
        print("mismatch at " .. i .. ": " .. tostring(ef) .. " | " .. tostring(es))
      end
    end
    assert.are.equal(0, mismatches)
  end)

  it("agrees with the full decoder on every corpus slice", function()
    local shared = H.shared_dir()
    if not shared then return pending("no corpus") end
    local p = io.popen("find " .. H.shell_quote(shared .. "/corpus/manifests") .. " -name '*.yaml' | LC_ALL=C sort")
    local used, files = 0, 0
    for f in p:lines() do
      local ok, docs = pcall(core.load_docs, f)
      if ok then
        local items = {}
        for _, d in ipairs(docs) do
          local o = d.object
          if type(o) == "table" and o.kind == "ResourceSlice" then items[#items + 1] = o end
        end
        if #items > 0 then
          files = files + 1
          local path = write_json(list(items))
          local fast, slow, okf, ef, oks, es = both(path)
          os.remove(path)
          assert.are.equal(oks, okf, f)
          if oks then
            assert.are.same(snapshot(slow), snapshot(fast), f)
            used = used + fast:stats().fast_path_slices
          else
            assert.are.equal(es, ef, f)
          end
        end
      end
    end
    p:close()
    assert.is_true(files >= 20)
    assert.is_true(used >= 15, "fast path used for " .. used .. " corpus slices")
  end)
end)
