-- policy_memo_spec.lua - the score memo (engine/policy/memo.c): a score
-- hook's answers are filed by what the hook read, so a later call that would
-- read the same values is answered without entering Lua - and always with
-- the answer the hook would have given.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

local function policy(name, body, extra)
  return string.format([[
return {
  name = %q, version = "1.0.0", api = 1, domains = {},%s
  score = function(node, placement)
%s
  end,
}
]], name, extra or "", body)
end

-- hooks that read different parts of their inputs
local HOOKS = {
  counts = policy("counts", [[
    local free = node.free_devices - #placement
    if free < 0 then free = 0 end
    return 1 - free / node.devices]]),
  attrs = policy("attrs", [[
    local s = 0
    for i, d in ipairs(placement) do
      local m = d.attributes.model
      if m == "h100" then s = s + 3 elseif m == "a100" then s = s + 2 end
      local n = d.attributes["dra.net/numaNode"]
      if type(n) == "table" then n = n[1] end
      if n == 0 then s = s + 0.5 end
      local q = d.capacity.memory
      if q and q >= dra.quantity("40Gi") then s = s + 0.25 end
      if i == 1 and d.name == "gpu-7" then s = s + 0.125 end
    end
    return s]]),
  pairs = policy("pairs", [[
    local n = 0
    for _, d in ipairs(placement) do
      for k, v in pairs(d.attributes) do n = n + #k + (type(v) == "number" and v or 1) end
    end
    return n]]),
  named = policy("named", [[
    return #node.name + (placement[1] and #tostring(placement[1]) or 0)]]),
}

local function rng(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s // 65536 % n + 1
  end
end

local MODELS = { "h100", "a100", "l4" }

local function random_input(rand)
  local node = { name = "node-" .. rand(6), devices = 8, free_devices = rand(9) - 1 }
  local placement = {}
  for i = 1, rand(3) - 1 do
    local d = { driver = "gpu.example.com", pool = node.name, name = "gpu-" .. rand(8), attributes = {} }
    if rand(4) > 1 then d.attributes.model = MODELS[rand(3)] end
    if rand(3) == 1 then d.attributes["dra.net/numaNode"] = rand(2) - 1 end
    if rand(4) == 1 then d.attributes["dra.net/numaNode"] = { rand(2) - 1, 1 } end
    if rand(2) == 1 then d.capacity = { memory = ({ "16Gi", "40Gi", "80Gi" })[rand(3)] } end
    placement[i] = d
  end
  return node, placement
end

describe("score memo", function()
  local dir
  after_each(function() P.rm(dir) end)

  it("answers exactly as calling the hooks does, and mostly without calling them", function()
    local files = {}
    for name, text in pairs(HOOKS) do files[name .. ".lua"] = text end
    dir = P.dir(files)
    local memo, plain = core.policy_load(dir), core.policy_load(dir, { score_memo = false })
    local rand = rng(5)
    for i = 1, 400 do
      local node, placement = random_input(rand)
      local s1, f1 = memo:score(node, placement)
      local s2, f2 = plain:score(node, placement)
      assert.are.equal(s2, s1, "input " .. i)
      assert.are.equal(f2, f1)
    end
    local sm, sp = memo:stats(), plain:stats()
    assert.are.equal(0, sp.score_memo_hits)
    assert.are.equal(4, memo:count())
    assert.are.equal(4 * 400, sp.calls.score)
    assert.are.equal(4 * 400, sm.calls.score + sm.score_memo_hits)
    assert.is_true(sm.score_memo_hits > 2 * sm.calls.score,
                   string.format("%d hits, %d calls", sm.score_memo_hits, sm.calls.score))
    memo:close()
    plain:close()
  end)

  it("files an answer by what was read: other nodes with the same counts share it", function()
    dir = P.dir({ ["counts.lua"] = HOOKS.counts })
    local s = core.policy_load(dir)
    local pl = { { driver = "d.example.com", name = "a" } }
    assert.are.equal(0.5, (s:score({ name = "n1", devices = 8, free_devices = 5 }, pl)))
    assert.are.equal(0.5, (s:score({ name = "n2", devices = 8, free_devices = 5 }, { { driver = "x", name = "y" } })))
    assert.are.equal(0.625, (s:score({ name = "n3", devices = 8, free_devices = 4 }, pl)))
    local st = s:stats()
    assert.are.equal(2, st.calls.score)
    assert.are.equal(1, st.score_memo_hits)
    s:close()
  end)

  it("never answers for a hook that uses math.random or logs", function()
    dir = P.dir({
      ["dice.lua"] = policy("dice", "    return math.random()"),
      ["chatty.lua"] = policy("chatty", '    dra.log("scoring " .. node.name)\n    return 1'),
    })
    local s = core.policy_load(dir)
    local node = { name = "n1", devices = 1, free_devices = 1 }
    local a = s:score(node, {})
    local b = s:score(node, {})
    assert.are.equal(a, b) -- seeded per call from the input: the same input, the same dice
    local st = s:stats()
    assert.are.equal(4, st.calls.score)
    assert.are.equal(0, st.score_memo_hits)
    local lines = 0
    for _, l in ipairs(s:logs()) do if l:find("scoring n1", 1, true) then lines = lines + 1 end end
    assert.are.equal(2, lines)
    s:close()
  end)

  it("remembers reads of keys no device has, until a device brings one", function()
    -- vendor names a cluster does not use are not interned (the interner is
    -- shared and never shrinks); the reads are still memoised as nil
    dir = P.dir({ ["vendor.lua"] = policy("vendor", [[
    local n = placement[1] and placement[1].attributes["nosuch.example.com/numaNode"]
    if n == nil then n = placement[1] and placement[1].attributes.nosuchBare end
    return (n or 0) + #placement]]) })
    local s = core.policy_load(dir)
    local node = { name = "n1", devices = 8, free_devices = 8 }
    local plain = { { driver = "d.example.com", name = "a", attributes = { model = "x" } } }
    assert.are.equal(1, (s:score(node, plain)))
    assert.are.equal(1, (s:score({ name = "n2", devices = 8, free_devices = 3 }, plain)))
    local st = s:stats()
    assert.are.equal(1, st.calls.score)
    assert.are.equal(1, st.score_memo_hits)
    -- a device with the key: the name is interned now, the memo starts over
    local with = { { driver = "d.example.com", name = "b", attributes = { ["nosuch.example.com/numaNode"] = 5 } } }
    assert.are.equal(6, (s:score(node, with)))
    assert.are.equal(1, (s:score(node, plain)))
    local bare = { { driver = "d.example.com", name = "c", attributes = { nosuchBare = 2 } } }
    assert.are.equal(3, (s:score(node, bare)))
    assert.are.equal(1, (s:score(node, plain)))
    assert.are.equal(6, (s:score(node, with)))
    -- no new names since: answered from the memo again
    assert.are.equal(1, (s:score(node, plain)))
    assert.are.equal(6, (s:score(node, with)))
    st = s:stats()
    assert.are.equal(6, st.calls.score)
    assert.are.equal(3, st.score_memo_hits)
    s:close()
  end)

  it("answers a hook whose reads are mostly keys no device has, by its other reads alone", function()
    -- 320 lookups of 40 unknown vendor names per call (more reads than a
    -- trace may record) and one real attribute: the unknown names are nil
    -- on every device, so the answer is filed by #placement and the model
    dir = P.dir({ ["vendors.lua"] = policy("vendors", [[
    local s = 0
    for i = 1, 320 do
      if placement[1] and placement[1].attributes["nosuch" .. i % 40 .. ".example.com/numa"] ~= nil then s = s + 100 end
    end
    local m = placement[1] and placement[1].attributes.model
    return s + #placement + (m == "h100" and 1 or 0)]]) })
    local s = core.policy_load(dir)
    local h100 = { { driver = "d.example.com", name = "a", attributes = { model = "h100" } } }
    local a100 = { { driver = "d.example.com", name = "b", attributes = { model = "a100" } } }
    for i = 1, 3 do
      local node = { name = "n" .. i, devices = 8, free_devices = i }
      assert.are.equal(2, (s:score(node, h100)))
      assert.are.equal(1, (s:score(node, a100)))
    end
    local st = s:stats()
    assert.are.equal(2, st.calls.score)
    assert.are.equal(4, st.score_memo_hits)
    -- one of the names comes: the memo starts over and sees it
    local with = { { driver = "d.example.com", name = "c", attributes = { ["nosuch7.example.com/numa"] = 0, model = "h100" } } }
    assert.are.equal(802, (s:score({ name = "n1", devices = 8, free_devices = 1 }, with)))
    assert.are.equal(2, (s:score({ name = "n1", devices = 8, free_devices = 1 }, h100)))
    assert.are.equal(802, (s:score({ name = "n2", devices = 8, free_devices = 1 }, with)))
    st = s:stats()
    assert.are.equal(4, st.calls.score)
    assert.are.equal(5, st.score_memo_hits)
    s:close()
  end)

  it("does not answer failed calls", function()
    dir = P.dir({ ["boom.lua"] = policy("boom", '    if node.free_devices == 0 then error("none left") end\n    return 1') })
    local s = core.policy_load(dir)
    for _ = 1, 2 do
      local _, feasible = s:score({ name = "n", devices = 1, free_devices = 0 }, {})
      assert.is_false(feasible)
    end
    assert.are.equal(1, (s:score({ name = "n", devices = 1, free_devices = 1 }, {})))
    assert.are.equal(1, (s:score({ name = "m", devices = 1, free_devices = 1 }, {})))
    local st = s:stats()
    assert.are.equal(3, st.calls.score)
    assert.are.equal(1, st.score_memo_hits)
    s:close()
  end)

  it("answers derive calls by what the hook read, exactly as calling it does", function()
    local derive = [[
return {
  name = "facts", version = "1.0.0", api = 1, domains = { "f.example.com" },
  derive = function(device)
    local m = device.attributes.model
    if m == nil then return nil end
    local out = { ["f.example.com/tier"] = (m == "h100") and "gold" or "silver" }
    local q = device.capacity.memory
    if q then out["f.example.com/gib"] = q:to("Gi") // 1 end
    local n = device.attributes["nosuch.example.com/numa"]
    if n then out["f.example.com/numa"] = n end
    local l = device.attributes.roots
    if l then out["f.example.com/roots"] = l end
    return out
  end,
}]]
    dir = P.dir({ ["facts.lua"] = derive, ["dice.lua"] = [[
return {
  name = "dice", version = "1.0.0", api = 1, domains = { "d.example.com" },
  derive = function(device) return { ["d.example.com/roll"] = math.random(1000) } end,
}]] })
    local memo, plain = core.policy_load(dir), core.policy_load(dir, { score_memo = false })
    local rand = rng(11)
    for i = 1, 300 do
      local attrs = {}
      if rand(5) > 1 then attrs.model = MODELS[rand(3)] end
      if rand(4) == 1 then attrs.roots = { "pci-" .. rand(2), "pci-9" } end
      if i > 200 and rand(3) == 1 then attrs["nosuch.example.com/numa"] = rand(4) end
      local dev = { driver = "gpu.example.com", pool = "n" .. rand(5), name = "gpu-" .. i, attributes = attrs }
      if rand(2) == 1 then dev.capacity = { memory = ({ "16Gi", "40Gi", "80Gi" })[rand(3)] } end
      assert.are.same(plain:derive(dev), memo:derive(dev), "device " .. i)
    end
    local sm, sp = memo:stats(), plain:stats()
    assert.are.equal(0, sp.derive_memo_hits)
    assert.are.equal(2 * 300, sp.calls.derive)
    assert.are.equal(2 * 300, sm.calls.derive + sm.derive_memo_hits)
    -- the dice policy never; the facts policy mostly from the memo
    assert.is_true(sm.derive_memo_hits > 200, sm.derive_memo_hits .. " hits")
    assert.is_true(sm.calls.derive >= 300)
    memo:close()
    plain:close()
  end)
end)
