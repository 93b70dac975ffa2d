-- alloc_cache_caps_spec.lua - the caches that grow with every distinct
-- selector text (an allocator's CEL compile cache and selector sets, the CEL
-- memo, the graph's validation compile cache) are capped: past a cap they
-- are emptied at the start of the next call and rebuilt on use, and no
-- answer changes.  Under `make test-asan` a program or selector set used
-- after it was freed would abort the run.
local core = require "draengine.core"
local H = require "support.helper"
local P = require "fixtures.policy.helper"

local read = H.read_file

local NODES = 4

local function setup(g)
  g:apply({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "gpu" },
            spec = { selectors = { { cel = { expression = 'device.driver == "gpu.example.com"' } } } } })
  for n = 1, NODES do
    local node = "node-" .. n
    g:apply({ apiVersion = "v1", kind = "Node", metadata = { name = node, labels = { zone = "a" } } })
    local devs = {}
    for i = 0, 7 do
      devs[#devs + 1] = { name = "gpu-" .. i, attributes = {
        index = { int = i }, model = { string = i < 4 and "h100" or "a100" },
        uuid = { string = string.format("GPU-%d-%d", n, i) } } }
    end
    g:apply({ apiVersion = "resource.k8s.io/v1", kind = "ResourceSlice", metadata = { name = node .. "-gpus" },
              spec = { driver = "gpu.example.com", nodeName = node, devices = devs,
                       pool = { name = node, generation = 1, resourceSliceCount = 1 } } })
  end
end

-- the i-th pod's selector: mostly new texts, every fourth an old one again
local function selector(i)
  local k = i % 4 == 0 and i // 2 or i
  return string.format('device.attributes["gpu.example.com"].index >= %d && ' ..
                       'device.attributes["gpu.example.com"].index != %d && ' ..
                       'device.attributes["gpu.example.com"].uuid != "retired-%d"', k % 6, (k * 5) % 8, k)
end

local function objects(i)
  local claim = { apiVersion = "resource.k8s.io/v1", kind = "ResourceClaim",
                  metadata = { name = "c" .. i, namespace = "default" },
                  spec = { devices = { requests = { { name = "gpu", exactly = {
                    deviceClassName = "gpu", count = 1,
                    selectors = { { cel = { expression = selector(i) } } } } } } } } }
  local pod = { apiVersion = "v1", kind = "Pod",
                metadata = { name = "p" .. i, namespace = "default", uid = "u" .. i },
                spec = { containers = { { name = "c", image = "x" } },
                         resourceClaims = { { name = "gpu", resourceClaimName = "c" .. i } } } }
  return claim, pod
end

-- Two worlds fed the same objects, one with tiny caps; every answer and
-- every allocation must be the same.
local function run(policies_dir)
  local worlds = {}
  for _, capped in ipairs({ false, true }) do
    local g = core.graph(capped and { cel_program_cap = 4 } or nil)
    setup(g)
    local w = { g = g, capped = capped }
    local opts = capped and { selector_set_cap = 3, cel_program_cap = 5 } or {}
    if policies_dir then
      w.host = core.policy_host(g, policies_dir)
      opts.policies = w.host
    end
    w.a = core.allocator(g, opts)
    worlds[#worlds + 1] = w
  end
  local placed = {}
  for i = 1, 80 do
    local r = {}
    for k, w in ipairs(worlds) do
      local claim, pod = objects(i)
      w.g:apply(claim)
      w.g:apply(pod)
      if w.host then w.host:cycle() end
      r[k] = w.a:schedule("default", "p" .. i)
      -- an Allocate call on its own is an outermost call too
      r[k].probe = w.a:allocate("node-" .. (i % NODES + 1), { { namespace = "default", name = "c" .. i } })
    end
    assert.are.same(r[1], r[2], "pod " .. i)
    if r[1].status == "scheduled" then placed[#placed + 1] = "c" .. i end
    -- pods finish, so that there is always room
    if #placed > 20 then
      local c = table.remove(placed, 1)
      for _, w in ipairs(worlds) do w.g:remove("ResourceClaim", "default", c) end
    end
  end
  return worlds
end

describe("capped selector caches", function()
  it("answer exactly as uncapped ones while they are emptied again and again", function()
    local worlds = run(nil)
    local plain, capped = worlds[1].a:stats(), worlds[2].a:stats()
    assert.are.equal(0, plain.cache_flushes)
    assert.is_true(plain.selector_sets >= 40, "selector sets without a cap: " .. plain.selector_sets)
    assert.is_true(capped.cache_flushes >= 20, "flushes: " .. capped.cache_flushes)
    -- at most the cap, plus what one call adds on top of it
    assert.is_true(capped.selector_sets <= 3 + 1, "selector sets: " .. capped.selector_sets)
    assert.is_true(capped.cel_programs <= 5 + 2, "programs: " .. capped.cel_programs)
    -- the graph's validation cache is emptied between objects
    assert.is_true(worlds[2].g:stats().cel_programs <= 4 + 1)
    assert.is_true(worlds[1].g:stats().cel_programs >= 40)
    for _, w in ipairs(worlds) do w.a:close() end
  end)

  it("never empties them inside a pod's node evaluations (score hooks: every node is allocated in one call)", function()
    local dir = P.dir({ ["binpack.lua"] = read(H.root .. "/policies/binpack.lua") })
    local worlds = run(dir)
    local capped = worlds[2].a:stats()
    assert.is_true(capped.choice_pods >= 80)
    assert.is_true(capped.cache_flushes >= 20)
    for _, w in ipairs(worlds) do
      w.a:close()
      w.host:close()
    end
    P.rm(dir)
  end)
end)
