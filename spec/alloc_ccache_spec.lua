-- alloc_ccache_spec.lua - compiled claims by spec (engine/alloc/al_ccache.c):
-- claims with equal specs reuse one compiled form, and whatever the form
-- depends on (classes, the policy revision, the spec's selectors and
-- constraints, the gates) gives the decisions a fresh compile gives.  The
-- reference is a new allocator on the same graph for every call: its cache
-- is empty, so it compiles.
local core = require "draengine.core"
local K = require "support.kubeapi"
local P = require "fixtures.policy.helper"

local NODES = 3

local function slice(node, n)
  local devs = {}
  for i = 0, n - 1 do
    devs[#devs + 1] = { name = "gpu-" .. i, attributes = { model = { string = i % 2 == 0 and "h100" or "l4" },
                                                          numa = { int = i // 2 } } }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "gpu-" .. node },
           spec = { driver = "gpu.example.com", nodeName = node, devices = devs,
                    pool = { name = node, generation = 1, resourceSliceCount = 1 } } }
end

local function cluster()
  local g = core.graph()
  for i = 0, NODES - 1 do
    local n = "node-" .. i
    g:apply({ apiVersion = "v1", kind = "Node", metadata = { name = n } })
    g:apply(slice(n, 4))
  end
  g:apply(K.class("gpu", "gpu.example.com"))
  return g
end

local MODEL = 'device.attributes["gpu.example.com"].model == "%s"'

local function claim(name, count, model, constraints)
  return K.claim_rq("default", name, { { "gpu", count, model and MODEL:format(model) } }, constraints)
end

-- every claim on every node: the warm allocator against a fresh one
local function same_as_fresh(g, a, names, opts)
  local n = 0
  for i = 0, NODES - 1 do
    for _, name in ipairs(names) do
      local fresh = core.allocator(g, opts)
      local want = fresh:allocate("node-" .. i, { { namespace = "default", name = name } })
      fresh:close()
      local got = a:allocate("node-" .. i, { { namespace = "default", name = name } })
      assert.are.same(want, got, name .. " on node-" .. i)
      n = n + 1
    end
  end
  return n
end

describe("compiled claims by spec", function()
  it("compiles a spec once for every claim that has it, on every node", function()
    local g = cluster()
    local names = {}
    for i = 1, 6 do
      names[i] = "c" .. i
      g:apply(claim(names[i], 2, "h100"))
    end
    local a = core.allocator(g)
    local calls = same_as_fresh(g, a, names)
    local s = a:stats()
    assert.are.equal(1, s.compile_cache_stores)
    assert.are.equal(calls - 1, s.compile_cache_hits)
    -- scheduling pods of those claims goes through the same cache
    for i = 1, 3 do g:apply(K.claim_pod("default", "p" .. i, names[i])) end
    for i = 1, 3 do assert.are.equal("scheduled", a:schedule("default", "p" .. i).status) end
    assert.are.equal(1, a:stats().compile_cache_stores)
    assert.is_true(a:stats().compile_cache_hits > calls - 1)
    a:close()
  end)

  it("keeps specs that differ in one selector or one constraint apart", function()
    local g = cluster()
    g:apply(claim("h", 1, "h100"))
    g:apply(claim("l", 1, "l4"))
    g:apply(claim("m", 2, nil, { { matchAttribute = "gpu.example.com/numa" } }))
    g:apply(claim("d", 2, nil, { { distinctAttribute = "gpu.example.com/numa" } }))
    g:apply(claim("m2", 2, nil, { { matchAttribute = "gpu.example.com/numa" } }))
    local a = core.allocator(g)
    same_as_fresh(g, a, { "h", "l", "m", "d", "m2" })
    local s = a:stats()
    assert.are.equal(4, s.compile_cache_stores) -- m2 is m's spec
    -- the answers really differ: different models, and pairs in one NUMA
    -- node against pairs across two
    local function devs(name)
      local r = a:allocate("node-0", { { namespace = "default", name = name } })
      assert.are.equal("allocated", r.status, name)
      local out = {}
      for _, x in ipairs(r.claims[1].allocation.devices.results) do out[#out + 1] = x.device end
      return table.concat(out, ",")
    end
    assert.are.equal("gpu-0", devs("h"))
    assert.are.equal("gpu-1", devs("l"))
    assert.are.equal("gpu-0,gpu-1", devs("m"))
    assert.are.equal("gpu-0,gpu-2", devs("d"))
    a:close()
  end)

  it("compiles again after a DeviceClass changes or goes, with the same errors", function()
    local g = cluster()
    for i = 1, 3 do g:apply(claim("c" .. i, 1)) end
    local names = { "c1", "c2", "c3" }
    local a = core.allocator(g)
    same_as_fresh(g, a, names)
    assert.are.equal(1, a:stats().compile_cache_stores)
    -- the class now selects only l4 devices
    g:apply(K.class("gpu", "gpu.example.com",
      { selectors = { { cel = { expression = MODEL:format("l4") } } } }))
    same_as_fresh(g, a, names)
    assert.are.equal(2, a:stats().compile_cache_stores)
    local r = a:allocate("node-0", { { namespace = "default", name = "c1" } })
    assert.are.equal("gpu-1", r.claims[1].allocation.devices.results[1].device)
    -- gone: the hard error of a fresh compile, every time (failures are not kept)
    g:remove("DeviceClass", nil, "gpu")
    same_as_fresh(g, a, names)
    r = a:allocate("node-1", { { namespace = "default", name = "c2" } })
    assert.are.equal("error", r.status)
    assert.matches('deviceclass.resource.k8s.io "gpu" not found', r.error, 1, true)
    assert.are.equal(2, a:stats().compile_cache_stores)
    -- back, with another selector
    g:apply(K.class("gpu", "gpu.example.com",
      { selectors = { { cel = { expression = MODEL:format("h100") } } } }))
    same_as_fresh(g, a, names)
    assert.are.equal(3, a:stats().compile_cache_stores)
    a:close()
  end)

  it("follows the gates the allocator was made with", function()
    local g = cluster()
    for i = 1, 2 do
      g:apply({ apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
                metadata = { name = "fa" .. i, namespace = "default" },
                spec = { devices = { requests = { { name = "gpu", firstAvailable = {
                  { name = "big", deviceClassName = "gpu", count = 3 },
                  { name = "small", deviceClassName = "gpu", count = 1 } } } } } } })
    end
    local off = { gates = "DRAPrioritizedList=false" }
    local a, b = core.allocator(g, off), core.allocator(g)
    for _ = 1, 2 do
      same_as_fresh(g, a, { "fa1", "fa2" }, off)
      same_as_fresh(g, b, { "fa1", "fa2" })
    end
    local r = a:allocate("node-0", { { namespace = "default", name = "fa1" } })
    assert.are.equal("error", r.status)
    assert.matches("DRAPrioritizedList feature is disabled", r.error, 1, true)
    assert.are.equal(0, a:stats().compile_cache_stores)
    r = b:allocate("node-0", { { namespace = "default", name = "fa2" } })
    assert.are.equal("allocated", r.status)
    assert.are.equal(1, b:stats().compile_cache_stores)
    assert.is_true(b:stats().compile_cache_hits > 0)
    a:close()
    b:close()
  end)

  it("compiles again after a policy reload", function()
    local function tiers(gold)
      return P.policy("tiers", { "tier.example.com" },
        string.format('    return { ["tier.example.com/tier"] = device.name == %q and "gold" or "silver" }', gold))
    end
    local dir = P.dir({ ["tiers.lua"] = tiers("gpu-3") })
    local g = cluster()
    local sel = 'device.attributes["tier.example.com"].tier == "gold"'
    for i = 1, 3 do g:apply(K.claim_rq("default", "t" .. i, { { "gpu", 1, sel } })) end
    local host = core.policy_host(g, dir)
    local a = core.allocator(g, { policies = host })
    local names = { "t1", "t2", "t3" }
    local function check(want)
      for i = 0, NODES - 1 do
        for _, name in ipairs(names) do
          local fresh = core.allocator(g, { policies = host })
          local f = fresh:allocate("node-" .. i, { { namespace = "default", name = name } })
          fresh:close()
          local r = a:allocate("node-" .. i, { { namespace = "default", name = name } })
          assert.are.same(f, r, name .. " on node-" .. i)
          assert.are.equal(want, r.claims[1].allocation.devices.results[1].device)
        end
      end
    end
    check("gpu-3")
    local stores = a:stats().compile_cache_stores
    assert.is_true(a:stats().compile_cache_hits > 0)
    P.write(dir, { ["tiers.lua"] = tiers("gpu-2") })
    assert.is_true(host:reload().swapped)
    check("gpu-2")
    assert.are.equal(stores + 1, a:stats().compile_cache_stores)
    a:close()
    host:close()
    P.rm(dir)
  end)

  it("stays within its cap, replacing the least recently used spec", function()
    local g = cluster()
    local names = {}
    for i = 1, 70 do
      names[i] = "c" .. i
      g:apply(claim(names[i], 1, "model-" .. i))
    end
    local a = core.allocator(g)
    -- 70 specs in turn on each node, 64 kept: every one was replaced
    -- before its turn came again
    same_as_fresh(g, a, names)
    assert.are.equal(3 * 70, a:stats().compile_cache_stores)
    assert.are.equal(0, a:stats().compile_cache_hits)
    -- the most recent 64 are there
    for i = 70 - 63, 70 do a:allocate("node-2", { { namespace = "default", name = names[i] } }) end
    assert.are.equal(64, a:stats().compile_cache_hits)
    assert.are.equal(3 * 70, a:stats().compile_cache_stores)
    a:close()
  end)
end)

-- the search's static pass takes devices without flags as a word
-- (al_ntab.plain); a device that gains or loses a taint in place changes it
describe("plain devices", function()
  it("follow a DeviceTaintRule added and removed under a warm allocator", function()
    local g = cluster()
    for i = 1, 2 do g:apply(claim("c" .. i, i * 2)) end
    local a = core.allocator(g)
    same_as_fresh(g, a, { "c1", "c2" })
    local function rule(name, dev)
      return { apiVersion = "resource.k8s.io/v1alpha3", kind = "DeviceTaintRule", metadata = { name = name },
               spec = { deviceSelector = { driver = "gpu.example.com", pool = "node-1", device = dev },
                        taint = { key = "example.com/broken", value = "true", effect = "NoSchedule" } } }
    end
    g:apply(rule("t0", "gpu-0"))
    g:apply(rule("t1", "gpu-1"))
    same_as_fresh(g, a, { "c1", "c2" })
    local r = a:allocate("node-1", { { namespace = "default", name = "c1" } })
    assert.are.equal("gpu-2,gpu-3", r.claims[1].allocation.devices.results[1].device .. "," ..
      r.claims[1].allocation.devices.results[2].device)
    assert.are.equal("unsatisfiable", a:allocate("node-1", { { namespace = "default", name = "c2" } }).status)
    g:remove("DeviceTaintRule", nil, "t0")
    g:remove("DeviceTaintRule", nil, "t1")
    same_as_fresh(g, a, { "c1", "c2" })
    assert.are.equal("allocated", a:allocate("node-1", { { namespace = "default", name = "c2" } }).status)
    a:close()
  end)
end)
