-- model_graph_spec.lua - the device graph: indexes, incremental updates with
-- generations, DeviceTaintRule application, allocated state, the assume
-- path, claims from templates, extended resources, node selectors.
local core = require "draengine.core"

local function device(name, attrs, caps, extra)
  local d = { name = name, attributes = {}, capacity = {} }
  for k, v in pairs(attrs or {}) do
    if type(v) == "number" then d.attributes[k] = { int = v }
    elseif type(v) == "boolean" then d.attributes[k] = { bool = v }
    else d.attributes[k] = { string = v } end
  end
  for k, v in pairs(caps or {}) do d.capacity[k] = { value = v } end
  for k, v in pairs(extra or {}) do d[k] = v end
  return d
end

local function slice(name, spec)
  spec.driver = spec.driver or "gpu.example.com"
  spec.pool = spec.pool or { name = spec.nodeName or "pool", generation = 1, resourceSliceCount = 1 }
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = name }, spec = spec }
end

local function gpus(n, prefix, numa)
  local out = {}
  for i = 0, n - 1 do
    out[#out + 1] = device((prefix or "gpu-") .. i, { model = "H100", numa = numa or (i // 4) }, { memory = "80Gi" })
  end
  return out
end

local function claim(ns, name, status)
  return {
    apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
    metadata = { name = name, namespace = ns },
    spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = "gpu.example.com" } } } } },
    status = status,
  }
end

local function result(dev, extra)
  local r = { request = "gpu", driver = "gpu.example.com", pool = "node-1", device = dev }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

describe("device graph indexes", function()
  it("indexes devices by node, pool and driver, and keeps network pools apart", function()
    local g = core.graph()
    g:apply(slice("n1-gpu", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(slice("n2-gpu", { nodeName = "node-2", devices = gpus(3) }))
    g:apply(slice("fabric", {
      driver = "net.example.com", pool = { name = "fabric", generation = 0, resourceSliceCount = 1 },
      nodeSelector = { nodeSelectorTerms = { { matchExpressions = { { key = "rack", operator = "In", values = { "r1" } } } } } },
      devices = { device("port-0") },
    }))
    assert.are.same({ "node-1", "node-2" }, g:nodes())
    assert.are.same({ "n1-gpu" }, g:slices_on_node("node-1"))
    assert.are.same({ "fabric" }, g:shared_slices())
    assert.are.same({ "n1-gpu", "n2-gpu" }, g:slices_of_driver("gpu.example.com"))
    assert.are.equal(3, #g:devices { node = "node-2" })
    assert.are.equal(1, #g:devices { driver = "net.example.com" })
    local d = g:device("gpu.example.com", "node-2", "gpu-2")
    assert.are.equal("node-2", d.node)
    assert.are.equal("H100", d.attributes["gpu.example.com/model"])
    assert.are.equal("int", d.attribute_types["gpu.example.com/numa"])
    local st = g:stats()
    assert.are.same({ 3, 6, 3 }, { st.slices, st.devices, st.pools })
  end)

  it("tracks pool completeness and the newest generation", function()
    local g = core.graph()
    local function part(name, gen, devs)
      return slice(name, { nodeName = "node-1", pool = { name = "p", generation = gen, resourceSliceCount = 2 }, devices = devs })
    end
    g:apply(part("p-a", 1, { device("a") }))
    local p = g:pool("gpu.example.com", "p")
    assert.is_false(p.complete)
    assert.are.equal(1, p.slices_at_generation)
    g:apply(part("p-b", 1, { device("b") }))
    assert.is_true(g:pool("gpu.example.com", "p").complete)
    assert.is_not_nil(g:device("gpu.example.com", "p", "b"))
    -- a newer generation starts: the pool is incomplete again and only the
    -- newest generation's devices are found by name
    g:apply(part("p-a", 2, { device("a2") }))
    p = g:pool("gpu.example.com", "p")
    assert.are.equal(2, p.generation)
    assert.is_false(p.complete)
    assert.is_nil(g:device("gpu.example.com", "p", "b"))
    assert.is_not_nil(g:device("gpu.example.com", "p", "a2"))
    assert.are.same({ "p-a", "p-b" }, p.slices) -- sorted by slice name, every generation
  end)
end)

describe("incremental updates", function()
  it("replacing a slice keeps device ids and bumps only changed devices", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(3) }))
    local before = {}
    for i = 0, 2 do before[i] = g:device("gpu.example.com", "node-1", "gpu-" .. i) end
    local pool_gen = g:pool("gpu.example.com", "node-1").gen
    local devs = gpus(3)
    devs[2].attributes.model = { string = "H200" } -- gpu-1 changes
    g:apply(slice("s", { nodeName = "node-1", devices = devs }))
    for i = 0, 2 do
      local d = g:device("gpu.example.com", "node-1", "gpu-" .. i)
      assert.are.equal(before[i].id, d.id)
      if i == 1 then
        assert.is_true(d.gen > before[i].gen)
        assert.are.equal("H200", d.attributes["gpu.example.com/model"])
      else
        assert.are.equal(before[i].gen, d.gen)
      end
    end
    assert.is_true(g:pool("gpu.example.com", "node-1").gen > pool_gen)
    assert.are.equal(3, g:stats().devices)
  end)

  it("a device removed from a slice disappears; a new one gets a new id", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    local old = g:device("gpu.example.com", "node-1", "gpu-1")
    g:apply(slice("s", { nodeName = "node-1", devices = { device("gpu-0", { model = "H100", numa = 0 }, { memory = "80Gi" }), device("gpu-9") } }))
    assert.is_nil(g:device("gpu.example.com", "node-1", "gpu-1"))
    local new = g:device("gpu.example.com", "node-1", "gpu-9")
    assert.is_true(new.id > old.id)
    assert.are.equal(2, g:stats().devices)
  end)

  it("deleting a slice removes its devices and the pool", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:remove("ResourceSlice", nil, "s")
    assert.are.same({ 0, 0, 0 }, { g:stats().slices, g:stats().devices, g:stats().pools })
    assert.are.same({}, g:slices_on_node("node-1"))
    assert.has_error(function() g:remove("ResourceSlice", nil, "s") end, 'ResourceSlice "s" not found')
  end)

  it("notifies listeners of every add, update and delete", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(1) }))
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(claim("default", "c"))
    g:remove("ResourceClaim", "default", "c")
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "r" },
              spec = { taint = { key = "k", effect = "None" } } })
    g:remove("DeviceTaintRule", nil, "r")
    g:remove("ResourceSlice", nil, "s")
    local got = {}
    for _, e in ipairs(g:events()) do got[#got + 1] = e.kind .. ":" .. e.op end
    assert.are.same({ "ResourceSlice:add", "ResourceSlice:update", "ResourceClaim:add", "ResourceClaim:delete",
                      "DeviceTaintRule:add", "DeviceTaintRule:delete", "ResourceSlice:delete" }, got)
    assert.are.same({}, g:events())
  end)

  it("every change bumps the graph generation", function()
    local g = core.graph()
    local g0 = g:generation()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(1) }))
    local g1 = g:generation()
    assert.is_true(g1 > g0)
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "c" }, spec = {} })
    assert.is_true(g:generation() > g1)
  end)
end)

describe("DeviceTaintRules", function()
  local function rule(name, sel, effect)
    return {
      apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = name },
      spec = { deviceSelector = sel, taint = { key = "example.com/" .. name, value = "x", effect = effect or "NoSchedule" } },
    }
  end

  it("append their taint after the published ones, only to the devices they select", function()
    local g = core.graph()
    local devs = gpus(2)
    devs[1].taints = { { key = "published", effect = "None" } }
    g:apply(slice("s1", { nodeName = "node-1", devices = devs }))
    g:apply(slice("s2", { nodeName = "node-2", devices = gpus(2) }))
    local untouched = g:device("gpu.example.com", "node-2", "gpu-0")
    local before = g:device("gpu.example.com", "node-1", "gpu-0")
    g:apply(rule("r", { driver = "gpu.example.com", pool = "node-1", device = "gpu-0" }))
    local d = g:device("gpu.example.com", "node-1", "gpu-0")
    assert.are.equal(2, #d.taints)
    assert.are.equal("published", d.taints[1].key)
    assert.are.same({ key = "example.com/r", value = "x", effect = "NoSchedule", rule = "r" }, d.taints[2])
    assert.is_true(d.gen > before.gen)
    assert.are.equal(untouched.gen, g:device("gpu.example.com", "node-2", "gpu-0").gen)
    assert.are.equal(0, #g:device("gpu.example.com", "node-1", "gpu-1").taints)
    -- changing the rule's selector moves the taint; removing it restores the device
    g:apply(rule("r", { driver = "gpu.example.com", pool = "node-2" }))
    assert.are.equal(1, #g:device("gpu.example.com", "node-1", "gpu-0").taints)
    assert.are.equal(1, #g:device("gpu.example.com", "node-2", "gpu-1").taints)
    g:remove("DeviceTaintRule", nil, "r")
    assert.are.equal(0, #g:device("gpu.example.com", "node-2", "gpu-1").taints)
  end)

  it("apply to slices added later, in rule-name order", function()
    local g = core.graph()
    g:apply(rule("b", { driver = "gpu.example.com" }, "NoExecute"))
    g:apply(rule("a", { driver = "gpu.example.com" }))
    g:apply(rule("other", { driver = "other.example.com" }))
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(1) }))
    local t = g:device("gpu.example.com", "node-1", "gpu-0").taints
    assert.are.same({ "a", "b" }, { t[1].rule, t[2].rule })
  end)

  it("without a deviceSelector taint every device (as the scheduler's tracker does)", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply({ apiVersion = "resource.k8s.io/v1alpha3", kind = "DeviceTaintRule", metadata = { name = "all" },
              spec = { taint = { key = "k", effect = "NoSchedule" } } })
    assert.are.equal(1, #g:device("gpu.example.com", "node-1", "gpu-1").taints)
  end)
end)

describe("allocated state", function()
  it("counts exclusive and shared use, skips adminAccess, sums consumed capacity", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(3) }))
    g:apply(claim("default", "a", { allocation = { devices = { results = { result("gpu-0") } } } }))
    g:apply(claim("default", "admin", { allocation = { devices = { results = { result("gpu-1", { adminAccess = true }) } } } }))
    local share = function(id, bw) return result("gpu-2", { shareID = id, consumedCapacity = { bw = bw } }) end
    g:apply(claim("default", "s1", { allocation = { devices = { results = { share("11111111-1111-1111-1111-111111111111", "1Gi") } } } }))
    g:apply(claim("default", "s2", { allocation = { devices = { results = { share("22222222-2222-2222-2222-222222222222", "512Mi") } } } }))
    assert.are.same({ exclusive = 1, shared = 0, consumed = {} }, g:usage("gpu.example.com", "node-1", "gpu-0"))
    assert.is_nil(g:usage("gpu.example.com", "node-1", "gpu-1"))
    assert.are.same({ exclusive = 0, shared = 2, consumed = { bw = "1536Mi" } }, g:usage("gpu.example.com", "node-1", "gpu-2"))
    local all = g:usage()
    assert.are.same({ "gpu-0", "gpu-2" }, { all[1].device, all[2].device })
    -- deleting a claim removes exactly its contribution
    local ug = g:usage_generation()
    g:remove("ResourceClaim", "default", "s1")
    assert.are.same({ exclusive = 0, shared = 1, consumed = { bw = "512Mi" } }, g:usage("gpu.example.com", "node-1", "gpu-2"))
    assert.is_true(g:usage_generation() > ug)
  end)

  it("keeps usage of devices that are not published", function()
    local g = core.graph()
    g:apply(claim("default", "a", { allocation = { devices = { results = { result("ghost") } } } }))
    assert.are.equal(1, g:usage("gpu.example.com", "node-1", "ghost").exclusive)
  end)

  it("assume path: set_allocation, reserve, deallocate", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(claim("ns1", "c"))
    local c0 = g:claim("ns1", "c")
    assert.is_false(c0.allocated)
    g:set_allocation("ns1", "c", {
      devices = { results = { result("gpu-1") } },
      nodeSelector = { nodeSelectorTerms = { { matchFields = { { key = "metadata.name", operator = "In", values = { "node-1" } } } } } },
    })
    local c1 = g:claim("ns1", "c")
    assert.is_true(c1.allocated)
    assert.is_true(c1.gen > c0.gen)
    assert.are.equal(1, g:usage("gpu.example.com", "node-1", "gpu-1").exclusive)
    assert.has_error(function() g:set_allocation("ns1", "c", { devices = { results = { result("gpu-0") } } }) end,
      'ResourceClaim "ns1/c" is already allocated')
    g:reserve("ns1", "c", { resource = "pods", name = "p", uid = "u-1" })
    g:reserve("ns1", "c", { resource = "pods", name = "p", uid = "u-1" }) -- idempotent
    assert.are.equal(1, #g:claim("ns1", "c").reserved_for)
    local j = g:claim_json("ns1", "c")
    assert.truthy(j:find('"reservedFor":[{"resource":"pods","name":"p","uid":"u-1"}]', 1, true), j)
    assert.truthy(j:find('"results":[{"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu-1"}]', 1, true), j)
    g:deallocate("ns1", "c")
    assert.is_false(g:claim("ns1", "c").allocated)
    assert.is_nil(g:usage("gpu.example.com", "node-1", "gpu-1"))
    assert.are.equal(0, #g:claim("ns1", "c").reserved_for)
    assert.is_nil(g:claim_json("ns1", "c"):find('"status"', 1, true))
    assert.has_error(function() g:reserve("ns1", "c", { resource = "pods", name = "p", uid = "u-2" }) end)
  end)

  it("assume path: records are reused, a claim allocated and released many times does not grow the graph", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(claim("ns1", "c"))
    -- reservedFor decoded from the input is copied when it grows, the input's entries kept
    g:apply(claim("ns1", "d", { allocation = { devices = { results = { result("gpu-0") } } },
      reservedFor = { { resource = "pods", name = "p0", uid = "u-0" } } }))
    for i = 1, 6 do g:reserve("ns1", "d", { resource = "pods", name = "p" .. i, uid = "u-" .. i }) end
    local rf = g:claim("ns1", "d").reserved_for
    assert.are.equal(7, #rf)
    assert.are.same({ "u-0", "u-1", "u-6" }, { rf[1].uid, rf[2].uid, rf[7].uid })
    local function cycle(i)
      g:set_allocation("ns1", "c", {
        devices = { results = { result("gpu-1", { tolerations = { { key = "k", operator = "Exists" } } }) } },
        nodeSelector = { nodeSelectorTerms = { { matchFields = { { key = "metadata.name", operator = "In", values = { "node-1" } } } } } },
      })
      for k = 1, 5 do g:reserve("ns1", "c", { resource = "pods", name = "p", uid = "u-" .. k }) end -- same names: interning is covered apart
      assert.are.equal(5, #g:claim("ns1", "c").reserved_for)
      assert.are.equal("node-1", g:claim("ns1", "c").allocation.nodeSelector.nodeSelectorTerms[1].matchFields[1].values[1])
      g:deallocate("ns1", "c")
    end
    cycle(0)
    local bytes = g:stats().bytes
    for i = 1, 200 do cycle(i) end
    assert.are.equal(bytes, g:stats().bytes)
  end)

  it("encodes an AllocationResult in the API shape", function()
    local g = core.graph()
    g:apply(claim("default", "c", { allocation = {
      devices = {
        results = { result("gpu-0") },
        config = { { source = "FromClass", opaque = { driver = "gpu.example.com", parameters = { mode = "x" } } } },
      },
      nodeSelector = { nodeSelectorTerms = { { matchFields = { { key = "metadata.name", operator = "In", values = { "n1" } } } } } },
    } }))
    local a = g:claim("default", "c").allocation
    assert.are.same({
      devices = {
        results = { { request = "gpu", driver = "gpu.example.com", pool = "node-1", device = "gpu-0" } },
        config = { { source = "FromClass", opaque = { driver = "gpu.example.com", parameters = { mode = "x" } } } },
      },
      nodeSelector = { nodeSelectorTerms = { { matchFields = { { key = "metadata.name", operator = "In", values = { "n1" } } } } } },
    }, a)
    local j = g:claim_json("default", "c")
    assert.truthy(j:find('"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu-0"}],"config":[{"source":"FromClass","opaque":{"driver":"gpu.example.com","parameters":{"mode":"x"}}}]},"nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}', 1, true), j)
  end)
end)

describe("claims from templates", function()
  local template = {
    apiVersion = "resource.k8s.io/v1", kind = "ResourceClaimTemplate",
    metadata = { name = "gpu-template", namespace = "team" },
    spec = { metadata = { labels = { app = "x" } },
             spec = { devices = { requests = { { name = "gpu", exactly = { deviceClassName = "gpu.example.com", count = 2 } } } } } },
  }
  local function pod(name, uid)
    return {
      apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "team", uid = uid },
      spec = { containers = { { name = "c", image = "i", resources = { claims = { { name = "gpus" } } } } },
               resourceClaims = { { name = "gpus", resourceClaimTemplateName = "gpu-template" } } },
    }
  end

  it("creates the claim the claim controller would, named <pod>-<claim>-<suffix>", function()
    local g = core.graph()
    g:apply(template)
    g:apply(pod("trainer", "6f1c1d52-0000-4000-8000-000000000001"))
    local name = g:claim_from_template("team", "trainer", 1)
    assert.truthy(name:match("^trainer%-gpus%-[bcdfghjklmnpqrstvwxz2456789][bcdfghjklmnpqrstvwxz2456789][bcdfghjklmnpqrstvwxz2456789][bcdfghjklmnpqrstvwxz2456789][bcdfghjklmnpqrstvwxz2456789]$"), name)
    local c = g:claim("team", name)
    assert.are.equal(2, c.requests[1].count)
    assert.are.equal(name, g:pod("team", "trainer").claim_statuses.gpus)
    -- deterministic and idempotent
    assert.are.equal(name, g:claim_from_template("team", "trainer", 1))
    local g2 = core.graph()
    g2:apply(template)
    g2:apply(pod("trainer", "6f1c1d52-0000-4000-8000-000000000001"))
    assert.are.equal(name, g2:claim_from_template("team", "trainer", 1))
    local j = g:claim_json("team", name)
    assert.truthy(j:find('"resource.kubernetes.io/pod-claim-name":"gpus"', 1, true), j)
    assert.truthy(j:find('"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"trainer"', 1, true), j)
  end)

  it("cuts long names like the controller (57 characters before the suffix)", function()
    local g = core.graph()
    g:apply(template)
    local long = string.rep("p", 60)
    g:apply(pod(long, "u"))
    local name = g:claim_from_template("team", long, 1)
    -- "<pod>-gpus-" is 66 > 57 characters: both parts are cut in proportion,
    -- pod[:60*57/66] .. "-" .. "gpus"[:4*57/66], then 5 generated characters
    assert.are.equal(51 + 1 + 3 + 5, #name)
    assert.are.equal(string.rep("p", 51) .. "-gpu", name:sub(1, 55))
  end)

  it("reports a missing template", function()
    local g = core.graph()
    g:apply(pod("p", "u"))
    assert.has_error(function() g:claim_from_template("team", "p", 1) end,
      'pod "team/p": resource claim template "gpu-template" not found in namespace "team"')
  end)
end)

describe("extended resources (KEP-5004)", function()
  local function class(name, ern, created)
    return { apiVersion = "resource.k8s.io/v1", kind = "DeviceClass",
             metadata = { name = name, creationTimestamp = created }, spec = { extendedResourceName = ern } }
  end
  it("map to the newest class, ties by name, plus the implicit name", function()
    local g = core.graph()
    g:apply(class("b-old", "example.com/gpu", "2026-01-01T00:00:00Z"))
    g:apply(class("a-new", "example.com/gpu", "2026-02-01T00:00:00Z"))
    assert.are.equal("a-new", g:class_for_extended_resource("example.com/gpu"))
    g:apply(class("0-tie", "example.com/gpu", "2026-02-01T00:00:00Z"))
    assert.are.equal("0-tie", g:class_for_extended_resource("example.com/gpu"))
    g:remove("DeviceClass", nil, "0-tie")
    assert.are.equal("a-new", g:class_for_extended_resource("example.com/gpu"))
    assert.are.equal("b-old", g:class_for_extended_resource("deviceclass.resource.kubernetes.io/b-old"))
    assert.is_nil(g:class_for_extended_resource("deviceclass.resource.kubernetes.io/nope"))
    assert.is_nil(g:class_for_extended_resource("example.com/none"))
  end)
end)

describe("node selectors", function()
  local function sel(exprs, fields)
    return { nodeSelectorTerms = { { matchExpressions = exprs, matchFields = fields } } }
  end
  it("follow core v1 semantics", function()
    local g = core.graph()
    local labels = { zone = "z1", cores = "64" }
    assert.is_true(g:nodesel_match(sel({ { key = "zone", operator = "In", values = { "z1", "z2" } } }), "n1", labels))
    assert.is_false(g:nodesel_match(sel({ { key = "zone", operator = "NotIn", values = { "z1" } } }), "n1", labels))
    assert.is_true(g:nodesel_match(sel({ { key = "gpu", operator = "DoesNotExist" } }), "n1", labels))
    assert.is_true(g:nodesel_match(sel({ { key = "cores", operator = "Gt", values = { "32" } } }), "n1", labels))
    assert.is_false(g:nodesel_match(sel({ { key = "cores", operator = "Lt", values = { "32" } } }), "n1", labels))
    assert.is_false(g:nodesel_match(sel({ { key = "zone", operator = "Gt", values = { "1" } } }), "n1", labels))
    assert.is_true(g:nodesel_match(sel(nil, { { key = "metadata.name", operator = "In", values = { "n1" } } }), "n1", {}))
    assert.is_false(g:nodesel_match(sel(nil, { { key = "metadata.name", operator = "In", values = { "n1" } } }), "n2", {}))
    assert.is_true(g:nodesel_match(sel(nil, { { key = "metadata.name", operator = "NotIn", values = { "n1" } } }), "n2", {}))
    -- terms are ORed, an empty term matches nothing
    assert.is_true(g:nodesel_match({ nodeSelectorTerms = { {}, { matchExpressions = { { key = "zone", operator = "Exists" } } } } }, "n", labels))
    assert.is_false(g:nodesel_match({ nodeSelectorTerms = { {} } }, "n", labels))
    -- a non-integer Gt value is an error, not a silent mismatch
    assert.has_error(function() g:nodesel_match(sel({ { key = "cores", operator = "Gt", values = { "many" } } }), "n", labels) end)
  end)
end)

describe("derived attributes", function()
  it("appear in the device view and bump the generation only on change", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(1) }))
    local gen0 = g:device("gpu.example.com", "node-1", "gpu-0").gen
    local gen1 = g:set_derived("gpu.example.com", "node-1", "gpu-0", { ["policy.example.com/tier"] = "gold" })
    assert.is_true(gen1 > gen0)
    assert.are.equal("gold", g:device("gpu.example.com", "node-1", "gpu-0").derived["policy.example.com/tier"])
    assert.are.equal(gen1, g:set_derived("gpu.example.com", "node-1", "gpu-0", { ["policy.example.com/tier"] = "gold" }))
    local gen2 = g:set_derived("gpu.example.com", "node-1", "gpu-0", { ["policy.example.com/numa"] = { 0, 1 } })
    assert.is_true(gen2 > gen1)
    assert.are.same({ 0, 1 }, g:device("gpu.example.com", "node-1", "gpu-0").derived["policy.example.com/numa"])
  end)
end)

describe("churn: claims and pods that come and go", function()
  local function pod(name, uid, claim_name)
    return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default", uid = uid },
             spec = { containers = { { name = "c", image = "x" } },
                      resourceClaims = { { name = "dev", resourceClaimName = claim_name } } } }
  end

  it("releases a deleted claim's and pod's names and UIDs, and reuses their ids", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(claim("default", "keep"))
    -- a first pod interns what every pod shares (container and claim entry names)
    g:apply(pod("warm-pod", "5c1e3c1a-0000-4000-8000-000000000000", "keep"))
    local base = g:stats()
    g:apply(claim("default", "churn-claim-1"))
    g:apply(pod("churn-pod-1", "5c1e3c1a-0000-4000-8000-000000000001", "churn-claim-1"))
    local c1, pod_ids = g:claim("default", "churn-claim-1").id, g:stats().pod_ids
    assert.are.equal(base.strings + 3, g:stats().strings)
    g:remove("Pod", "default", "churn-pod-1")
    g:remove("ResourceClaim", "default", "churn-claim-1")
    local after = g:stats()
    assert.are.equal(base.strings, after.strings)
    assert.are.equal(base.claims, after.claims)
    for i = 2, 50 do
      g:apply(claim("default", "churn-claim-" .. i))
      g:apply(pod("churn-pod-" .. i, string.format("5c1e3c1a-0000-4000-8000-%012d", i), "churn-claim-" .. i))
      assert.are.equal(c1, g:claim("default", "churn-claim-" .. i).id)
      g:remove("Pod", "default", "churn-pod-" .. i)
      g:remove("ResourceClaim", "default", "churn-claim-" .. i)
    end
    local st = g:stats()
    assert.are.equal(base.strings, st.strings)
    assert.are.equal(c1 + 1, st.claim_ids)
    assert.are.equal(pod_ids, st.pod_ids)
    assert.is_nil(g:claim("default", "churn-claim-7"))
    assert.has_error(function() g:remove("Pod", "default", "churn-pod-7") end, 'Pod "default/churn-pod-7" not found')
  end)

  it("a reservation keeps the pod's name and UID while the claim lives", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    local function round(i)
      local uid = string.format("5c1e3c1a-0000-4000-8000-%012d", i)
      g:apply(claim("default", "c" .. i))
      g:apply(pod("p" .. i, uid, "c" .. i))
      g:set_allocation("default", "c" .. i, { devices = { results = { result("gpu-0") } } })
      g:reserve("default", "c" .. i, { resource = "pods", name = "p" .. i, uid = uid })
      g:remove("Pod", "default", "p" .. i)
      local j = g:claim_json("default", "c" .. i)
      assert.truthy(j:find('"reservedFor":[{"resource":"pods","name":"p' .. i .. '","uid":"' .. uid .. '"}]', 1, true), j)
      g:remove("ResourceClaim", "default", "c" .. i)
      assert.is_nil(g:usage("gpu.example.com", "node-1", "gpu-0"))
    end
    round(1)
    local base = g:stats().strings
    for i = 2, 20 do round(i) end
    assert.are.equal(base, g:stats().strings)
  end)

  it("a name interned elsewhere stays when the claim that shared it goes", function()
    local g = core.graph()
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "shared-name" }, spec = {} })
    g:apply(claim("default", "shared-name"))
    g:remove("ResourceClaim", "default", "shared-name")
    assert.are.equal("shared-name", g:class("shared-name").name)
    g:apply(claim("default", "other"))
    assert.are.equal("shared-name", g:class("shared-name").name)
    assert.are.equal("other", g:claim("default", "other").name)
  end)

  it("JSON output is the same for a claim and pod that took reused ids", function()
    local g = core.graph()
    g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    g:apply(claim("default", "first"))
    g:apply(pod("first-pod", "5c1e3c1a-0000-4000-8000-0000000000f1", "first"))
    g:remove("Pod", "default", "first-pod")
    g:remove("ResourceClaim", "default", "first")
    g:apply(claim("default", "second"))
    g:apply(pod("second-pod", "5c1e3c1a-0000-4000-8000-0000000000f2", "second"))
    local fresh = core.graph()
    fresh:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
    fresh:apply(claim("default", "second"))
    fresh:apply(pod("second-pod", "5c1e3c1a-0000-4000-8000-0000000000f2", "second"))
    assert.are.equal(fresh:claim_json("default", "second"), g:claim_json("default", "second"))
    assert.are.same(fresh:pod("default", "second-pod"), g:pod("default", "second-pod"))
  end)
end)

describe("a claim's JSON from its decoded form", function()
  local cjson_claim = '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"default",' ..
    '"uid":"u-1","resourceVersion":"7","labels":{"a":"b"},"annotations":{"x":"y"},"ownerReferences":[{"apiVersion":"v1",' ..
    '"kind":"Pod","name":"p","uid":"u-p","controller":true}],"finalizers":["f"]},"spec":{"devices":{"requests":[{"name":"gpu",' ..
    '"exactly":{"deviceClassName":"gpu.example.com","selectors":[{"cel":{"expression":"device.driver == \\"gpu.example.com\\""}}],' ..
    '"allocationMode":"ExactCount","count":2}},{"name":"any","firstAvailable":[{"name":"one","deviceClassName":"gpu.example.com"}]}],' ..
    '"constraints":[{"requests":["gpu"],"matchAttribute":"gpu.example.com/numa"}]}}}'
  local function load(text)
    local g = core.graph()
    g:apply(text)
    return g
  end

  it("gives back the input byte for byte, whether the struct or the kept text encodes it", function()
    local g = load(cjson_claim)
    assert.are.equal(cjson_claim, g:claim_json("default", "c"))
    -- fields the struct does not encode (config, a v1beta1 shape, key order) keep the text
    local with_config = cjson_claim:gsub('"constraints"', '"config":[{"opaque":{"driver":"gpu.example.com",' ..
      '"parameters":{"z":1,"a":[1.5,null]}}}],"constraints"')
    g = load(with_config)
    assert.are.equal(with_config, g:claim_json("default", "c"))
    local reordered = '{"kind":"ResourceClaim","apiVersion":"resource.k8s.io/v1","metadata":{"namespace":"default","name":"c"},' ..
      '"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}'
    g = load(reordered)
    assert.are.equal(reordered, g:claim_json("default", "c"))
  end)

  it("writes the status as it is now on both paths", function()
    for _, extra in ipairs({ "", '"config":[{"opaque":{"driver":"gpu.example.com","parameters":{}}}],' }) do
      local text = cjson_claim:gsub('"constraints"', extra .. '"constraints"')
      local g = load(text)
      g:apply(slice("s", { nodeName = "node-1", devices = gpus(2) }))
      g:set_allocation("default", "c", { devices = { results = { result("gpu-0"), result("gpu-1") } } })
      g:reserve("default", "c", { resource = "pods", name = "p", uid = "u-p" })
      local want = text:sub(1, -2) .. ',"status":{"allocation":{"devices":{"results":[' ..
        '{"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu-0"},' ..
        '{"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu-1"}]}},' ..
        '"reservedFor":[{"resource":"pods","name":"p","uid":"u-p"}]}}'
      assert.are.equal(want, g:claim_json("default", "c"))
      g:deallocate("default", "c")
      assert.are.equal(text, g:claim_json("default", "c"))
    end
  end)
end)
