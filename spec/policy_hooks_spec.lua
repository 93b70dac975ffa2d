-- policy_hooks_spec.lua - what hooks see and return: device views, value
-- conversion, domain checks, groups, score, admit, failure modes and the
-- reports they produce.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

local H100 = {
  driver = "gpu.nvidia.com", pool = "node-1", name = "gpu-0", node = "node-1",
  attributes = {
    type = "gpu", productName = "NVIDIA H100 80GB HBM3", architecture = "Hopper",
    cudaComputeCapability = { version = "9.0.0" }, driverVersion = { version = "580.105.8" },
    ["resource.kubernetes.io/pcieRoot"] = "pci0000:44", ["resource.kubernetes.io/numaNode"] = { 0, 1 },
  },
  capacity = { memory = "81559Mi" },
}

local dirs = {}
local function set_of(files, opts)
  local d = P.dir(files)
  dirs[#dirs + 1] = d
  return core.policy_load(d, opts), d
end
local function derive_policy(body, domains, extra, opts)
  return set_of({ ["p.lua"] = P.policy("p", domains or { "x.example.com" }, body, extra) }, opts)
end

teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

describe("the device a hook sees", function()
  it("has the driver's names, typed values and quantities", function()
    local s = derive_policy([[
    local a = device.attributes
    return {
      ["x.example.com/driver"] = device.driver, ["x.example.com/pool"] = device.pool,
      ["x.example.com/name"] = device.name, ["x.example.com/node"] = device.node,
      ["x.example.com/bare"] = a.productName, ["x.example.com/qualified"] = a["gpu.nvidia.com/productName"],
      ["x.example.com/missing"] = tostring(a.nope) .. tostring(a["other.example.com/productName"]),
      ["x.example.com/cc"] = a.cudaComputeCapability.major * 10 + a.cudaComputeCapability.minor,
      ["x.example.com/newer"] = a.driverVersion > dra.version("575.0.0") and a.driverVersion >= "580.105.8",
      ["x.example.com/numas"] = #a["resource.kubernetes.io/numaNode"],
      ["x.example.com/mem"] = device.capacity.memory:value(),
      ["x.example.com/memGi"] = math.floor(device.capacity.memory:to("Gi")),
      ["x.example.com/memtext"] = tostring(device.capacity.memory),
      ["x.example.com/big"] = device.capacity.memory > "80Gi" and device.capacity.memory < dra.quantity("80Gi") + "1Gi",
    }]])
    local r = assert(s:derive(H100))
    assert.are.same({
      ["x.example.com/driver"] = "gpu.nvidia.com", ["x.example.com/pool"] = "node-1", ["x.example.com/name"] = "gpu-0",
      ["x.example.com/node"] = "node-1", ["x.example.com/bare"] = "NVIDIA H100 80GB HBM3",
      ["x.example.com/qualified"] = "NVIDIA H100 80GB HBM3", ["x.example.com/missing"] = "nilnil",
      ["x.example.com/cc"] = 90, ["x.example.com/newer"] = true, ["x.example.com/numas"] = 2,
      ["x.example.com/mem"] = 81559 * 1024 * 1024, ["x.example.com/memGi"] = 79,
      ["x.example.com/memtext"] = "81559Mi", ["x.example.com/big"] = false,
    }, r)
    s:close()
  end)

  it("iterates attributes in qualified-name order", function()
    local s = derive_policy([[
    local names = {}
    for k in pairs(device.attributes) do names[#names + 1] = k end
    return { ["x.example.com/names"] = table.concat(names, ","):sub(1, 64) }]])
    local r = s:derive({ driver = "d.example.com", attributes = { zed = 1, alpha = 2, ["a.example.com/m"] = 3 } })
    assert.are.equal("a.example.com/m,d.example.com/alpha,d.example.com/zed", r["x.example.com/names"])
    s:close()
  end)

  it("does not show other policies' derived attributes to derive", function()
    local s = set_of({
      ["a.lua"] = P.policy("a", { "a.example.com" }, 'return { ["a.example.com/x"] = 1 }'),
      ["b.lua"] = P.policy("b", { "b.example.com" },
        'return { ["b.example.com/saw"] = tostring(device.attributes["a.example.com/x"]) }'),
    })
    assert.are.same({ ["a.example.com/x"] = 1, ["b.example.com/saw"] = "nil" }, s:derive({ driver = "d.example.com" }))
    s:close()
  end)
end)

describe("derive results", function()
  it("convert ints, bools, strings, versions and lists", function()
    local s = derive_policy([[
    return {
      ["x.example.com/i"] = 7, ["x.example.com/f"] = 3.0, ["x.example.com/b"] = false,
      ["x.example.com/s"] = "gold", ["x.example.com/v"] = dra.version("1.2.3-rc.1"),
      ["x.example.com/is"] = {1, 2, 3}, ["x.example.com/ss"] = {"a", "b"},
      ["x.example.com/vs"] = {dra.version("1.0.0")}, ["x.example.com/empty"] = {},
    }]])
    local r, blocked = s:derive({ driver = "d.example.com" })
    assert.are.same({
      ["x.example.com/i"] = 7, ["x.example.com/f"] = 3, ["x.example.com/b"] = false, ["x.example.com/s"] = "gold",
      ["x.example.com/v"] = { version = "1.2.3-rc.1" }, ["x.example.com/is"] = { 1, 2, 3 },
      ["x.example.com/ss"] = { "a", "b" }, ["x.example.com/vs"] = { { version = "1.0.0" } },
      ["x.example.com/empty"] = {},
    }, r)
    assert.is_false(blocked)
    s:close()
  end)

  local refused = {
    { 'return { ["y.example.com/a"] = 1 }', "outside the policy's domains (x.example.com)" },
    { 'return { tier = "gold" }', "without a domain" },
    { 'return { ["x.example.com/Bad-Name"] = 1 }', "not a qualified name" },
    { 'return { ["x.example.com/f"] = 1.5 }', "is not an integer" },
    { 'return { ["x.example.com/s"] = ("x"):rep(65) }', "string of 65 bytes exceeds the limit of 64 bytes" },
    { 'local t = {} for i = 1, 49 do t[i] = i end return { ["x.example.com/l"] = t }', "list of 49 values" },
    { 'return { ["x.example.com/l"] = {1, "a"} }', "list mixes value types" },
    { 'return { ["x.example.com/l"] = {x = 1} }', "a list must be an array" },
    { 'return { ["x.example.com/t"] = {{1}} }', "list element 1 is a table" },
    { 'return { ["x.example.com/n"] = print }', "undeclared global 'print'" },
    { "return 42", "derive returns a table" },
    { 'local t = {} for i = 1, 33 do t["x.example.com/a" .. i] = i end return t', "more than 32 attributes" },
  }
  for i, c in ipairs(refused) do
    it("refuse bad results (" .. i .. "): " .. c[2], function()
      local s, d = derive_policy(c[1])
      local r, msg, reason, file, line = s:derive({ driver = "d.example.com" })
      assert.is_nil(r)
      assert.truthy(msg:find(c[2], 1, true), msg)
      assert.truthy(reason == "result" or reason == "error", reason)
      assert.are.equal(d .. "/p.lua", file)
      assert.is_true(line >= 3)
      assert.truthy(msg:find("policy p (revision ", 1, true), msg)
      s:close()
    end)
  end

  it("bound strings by the configured limit", function()
    local s = derive_policy('return { ["x.example.com/s"] = ("x"):rep(100) }', nil, nil, { max_string = 128 })
    assert.are.equal(100, #s:derive({ driver = "d.example.com" })["x.example.com/s"])
    s:close()
  end)
end)

describe("failures", function()
  it("are reported with name, revision, file:line and reason, and other policies go on", function()
    local s, d = set_of({
      ["bad.lua"] = P.policy("bad", { "bad.example.com" }, "    local x = nil\n    return { [\"bad.example.com/v\"] = x.field }"),
      ["good.lua"] = P.policy("good", { "good.example.com" }, 'return { ["good.example.com/ok"] = true }'),
    })
    local r, msg, reason, file, line = s:derive({ driver = "d.example.com" })
    assert.is_nil(r)
    assert.are.equal("error", reason)
    assert.are.equal(d .. "/bad.lua", file)
    assert.are.equal(5, line)
    local logs = s:logs()
    assert.are.equal(1, #logs)
    assert.truthy(logs[1]:find(d .. "/bad.lua:5", 1, true), logs[1])
    assert.truthy(logs[1]:find("[bad]", 1, true), logs[1])
    assert.truthy(logs[1]:find("attempt to index a nil value", 1, true), logs[1])
    local rev = s:info(1).revision:sub(1, 12)
    assert.truthy(msg:find(rev, 1, true), msg)
    assert.are.equal(1, s:stats().failures.error)
    assert.are.equal(2, s:stats().calls.derive)
    s:close()
  end)

  it("fail closed by default: the policy's facts are absent", function()
    local s = set_of({
      ["loop.lua"] = P.policy("loop", { "loop.example.com" },
        "    if device.name == 'slow' then while true do end end\n    return { [\"loop.example.com/x\"] = 1 }"),
      ["good.lua"] = P.policy("good", { "good.example.com" }, 'return { ["good.example.com/ok"] = true }'),
    }, { instructions = 100000 })
    assert.are.same({ ["good.example.com/ok"] = true, ["loop.example.com/x"] = 1 }, s:derive({ driver = "d.example.com", name = "fast" }))
    local r, msg, reason = s:derive({ driver = "d.example.com", name = "slow" })
    assert.is_nil(r)
    assert.are.equal("instructions", reason)
    assert.truthy(msg:find("instruction budget exceeded", 1, true), msg)
    -- the VM keeps working for the next device
    assert.are.same({ ["good.example.com/ok"] = true, ["loop.example.com/x"] = 1 }, s:derive({ driver = "d.example.com", name = "fast" }))
    s:close()
  end)

  it("stop memory bombs with the per-VM cap", function()
    local s = derive_policy("local t = {} for i = 1, 1e7 do t[i] = ('x'):rep(100) .. i end return nil", nil, nil,
      { memory = 8 * 1024 * 1024, instructions = 100000000, deadline_ms = 10000 })
    local r, msg, reason = s:derive({ driver = "d.example.com" })
    assert.is_nil(r)
    assert.are.equal("memory", reason)
    assert.truthy(msg:find("memory cap exceeded", 1, true), msg)
    assert.is_true(s:info(1).memory <= 8 * 1024 * 1024)
    s:close()
  end)

  it("route dra.log to the log with the policy's line", function()
    local s, d = derive_policy("    dra.log('seen', device.name)\n    dra.warn('careful')\n    return nil")
    s:derive({ driver = "d.example.com", name = "gpu-9" })
    local logs = s:logs()
    assert.are.equal(2, #logs)
    assert.truthy(logs[1]:find("^I " .. d:gsub("%p", "%%%0") .. "/p%.lua:4 %[p%] seen gpu%-9"), logs[1])
    assert.truthy(logs[2]:find("^W .*/p%.lua:5 %[p%] careful"), logs[2])
    s:close()
  end)

  it("cap dra.log lines per call", function()
    local s = derive_policy("for i = 1, 100 do dra.log('line', i) end return nil")
    s:derive({ driver = "d.example.com" })
    local logs = s:logs()
    assert.are.equal(16, #logs)
    assert.truthy(logs[16]:find("further dra.log lines of this call are dropped", 1, true))
    s:close()
  end)
end)

describe("groups", function()
  local src = [[
return {
  name = "g", version = "1.0.0", api = 1, domains = {},
  groups = function(device)
    local a = device.attributes
    if a.kind == "none" then return nil end
    if a.kind == "bad" then return { scope = 42 } end
    if a.kind == "boom" then error("no scope for " .. device.name) end
    return { scope = a.parent, groups = { a.kind } }
  end,
}]]

  it("give a scope and groups", function()
    local s = set_of({ ["g.lua"] = src })
    local r = s:groups({ driver = "d.example.com", attributes = { parent = "GPU-1", kind = "mig" } })
    assert.are.same("g:GPU-1", r.scope)
    assert.are.same({ "mig" }, r.groups)
    assert.is_nil(s:groups({ driver = "d.example.com", attributes = { kind = "none" } }))
    s:close()
  end)

  it("block the device when they fail closed, and leave it unconstrained when open", function()
    local s = set_of({ ["g.lua"] = src })
    local r, msg, reason, file, line, blocked = s:groups({ driver = "d.example.com", name = "x", attributes = { kind = "boom" } })
    assert.is_nil(r)
    assert.truthy(msg:find("no scope for x", 1, true))
    assert.is_true(blocked)
    r, msg, reason = s:groups({ driver = "d.example.com", attributes = { kind = "bad" } })
    assert.are.equal("result", reason)
    assert.truthy(msg:find("scope that is not a string", 1, true), msg)
    s:close()
    local open = set_of({ ["g.lua"] = src:gsub('domains = {},', 'domains = {}, failure = "open",') })
    r, msg, reason, file, line, blocked = open:groups({ driver = "d.example.com", attributes = { kind = "boom" } })
    assert.is_false(blocked)
    open:close()
  end)
end)

describe("score and admit", function()
  local src = [[
return {
  name = "s", version = "1.0.0", api = 1, domains = {}, weight = 2,
  score = function(node, placement)
    if node.name == "bad" then return 0/0 end
    if node.name == "boom" then error("cannot score") end
    return node.free_devices - #placement + (node.labels.zone == "a" and 100 or 0)
  end,
  admit = function(claim)
    if claim.namespace == "research" and claim.requests[1].class == "gold-gpu" then
      return false, "gold GPUs are reserved for production"
    end
    if claim.name == "boom" then error("admit failed") end
    return true
  end,
}]]

  it("weights scores and sees node and placement", function()
    local s = set_of({ ["s.lua"] = src })
    local score, feasible = s:score({ name = "n1", devices = 8, free_devices = 5 },
      { { driver = "d.example.com", name = "a" }, { driver = "d.example.com", name = "b" } })
    assert.are.equal(6, score)
    assert.is_true(feasible)
    local _, feasible2, msg = s:score({ name = "bad", devices = 1, free_devices = 1 }, {})
    assert.is_false(feasible2)
    assert.truthy(msg:find("non-finite", 1, true), msg)
    s:close()
  end)

  it("refuses claims with the policy's reason", function()
    local s = set_of({ ["s.lua"] = src })
    assert.is_true(s:admit({ namespace = "prod", name = "c", requests = { { name = "gpu", class = "gold-gpu" } } }))
    local ok, why = s:admit({ namespace = "research", name = "c", requests = { { name = "gpu", class = "gold-gpu" } } })
    assert.is_false(ok)
    assert.are.equal("policy s: gold GPUs are reserved for production", why)
    ok, why = s:admit({ namespace = "prod", name = "boom", requests = {} })
    assert.is_false(ok)
    assert.truthy(why:find("policy s failed (error)", 1, true), why)
    s:close()
  end)
end)
