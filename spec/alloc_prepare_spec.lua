-- alloc_prepare_spec.lua - al_prepare fills the allocator's caches (node
-- tables, class candidate sets) off the decision path; decisions after it
-- are exactly those of an allocator that built everything on first use.
local core = require "draengine.core"
local K = require "support.kubeapi"

local NODES = 6

local function slice(node, gen, n, model)
  local devs = {}
  for i = 0, n - 1 do
    devs[#devs + 1] = { name = "gpu-" .. i, attributes = { model = { string = model }, numa = { int = i // 2 } } }
  end
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "gpu-" .. node },
           spec = { driver = "gpu.example.com", nodeName = node, devices = devs,
                    pool = { name = node, generation = gen, resourceSliceCount = 1 } } }
end

local function nic_slice(node)
  return { apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = "nic-" .. node },
           spec = { driver = "nic.example.com", nodeName = node,
                    devices = { { name = "nic-0", attributes = { numa = { int = 0 } } } },
                    pool = { name = "nic-" .. node, generation = 1, resourceSliceCount = 1 } } }
end

local function claim(name, requests)
  return K.claim_rq("default", name, requests)
end

local function pod(name, claimname)
  return K.claim_pod("default", name, claimname)
end

local function cluster()
  local g = core.graph()
  for i = 0, NODES - 1 do
    local n = "node-" .. i
    g:apply({ apiVersion = "v1", kind = "Node", metadata = { name = n } })
    g:apply(slice(n, 1, 2 + i % 3, i % 2 == 0 and "h100" or "l4"))
    if i % 3 == 0 then g:apply(nic_slice(n)) end
  end
  g:apply(K.class("gpu", "gpu.example.com"))
  g:apply(K.class("nic", "nic.example.com"))
  return g
end

-- a stream that fills nodes, asks for what only some nodes have, and ends
-- with pods that cannot fit anywhere
local STREAM = {
  { { "gpu" } }, { { "gpu", 2 } }, { { "gpu" }, { "nic" } },
  { { "gpu", 1, 'device.attributes["gpu.example.com"].model == "l4"' } },
  { { "gpu", 3 } }, { { "nic" } }, { { "gpu", 2 }, { "nic" } }, { { "gpu" } }, { { "gpu", 4 } },
  { { "gpu" } }, { { "gpu" } }, { { "nic" } }, { { "gpu", 2 } }, { { "gpu" } }, { { "gpu" } },
}

local function play(g, a)
  local out = {}
  for i, req in ipairs(STREAM) do
    g:apply(claim("c" .. i, req))
    g:apply(pod("p" .. i, "c" .. i))
    out[i] = a:schedule("default", "p" .. i)
  end
  return out
end

describe("al_prepare", function()
  it("builds every node table and class candidate set once, and a second call finds nothing to do", function()
    local g = cluster()
    local a = core.allocator(g)
    assert.are.equal(NODES, a:prepare())
    local s = a:stats()
    assert.are.equal(NODES, s.node_tables_built)
    assert.are.equal(NODES * 2, s.candidate_sets_built) -- two classes on every table
    assert.are.equal(0, a:prepare())
    assert.are.equal(NODES, a:stats().node_tables_built)
    -- decisions find the tables ready
    local r = play(g, a)
    assert.are.equal("scheduled", r[1].status)
    assert.are.equal(NODES, a:stats().node_tables_built)
    a:close()
  end)

  it("leaves every decision exactly as a cold allocator makes it", function()
    local g1, g2 = cluster(), cluster()
    local warm, cold = core.allocator(g1), core.allocator(g2)
    warm:prepare()
    local r1, r2 = play(g1, warm), play(g2, cold)
    local placed, refused = 0, 0
    for i = 1, #STREAM do
      assert.are.same(r2[i], r1[i], "pod p" .. i)
      if r1[i].status == "scheduled" then placed = placed + 1 else refused = refused + 1 end
    end
    assert.is_true(placed > 0 and refused > 0, placed .. " placed, " .. refused .. " refused")
    warm:close()
    cold:close()
  end)

  it("rebuilds only the table of a node whose slice changed", function()
    local g = cluster()
    local a = core.allocator(g)
    a:prepare()
    g:apply(slice("node-2", 2, 5, "l4"))
    assert.are.equal(1, a:prepare())
    assert.are.equal(NODES + 1, a:stats().node_tables_built)
    assert.are.equal(0, a:prepare())
    -- a new class: no table is rebuilt, its candidate sets are made
    local before = a:stats().candidate_sets_built
    g:apply(K.class("l4", "gpu.example.com",
      { selectors = { { cel = { expression = 'device.attributes["gpu.example.com"].model == "l4"' } } } }))
    a:prepare()
    assert.are.equal(NODES + 1, a:stats().node_tables_built)
    assert.are.equal(before + NODES, a:stats().candidate_sets_built)
    a:close()
  end)

  it("stops at its budget and goes on where it left off on the next call", function()
    local g = cluster()
    local a = core.allocator(g)
    local first = a:prepare(1e-6) -- past the budget after the first table built
    assert.are.equal(1, first)
    local total = first
    for _ = 1, NODES do
      local n = a:prepare(1e-6)
      if n == 0 then break end
      total = total + n
    end
    assert.are.equal(NODES, total)
    assert.are.equal(0, a:prepare())
    assert.has_error(function() a:prepare(-1) end)
    a:close()
  end)
end)
