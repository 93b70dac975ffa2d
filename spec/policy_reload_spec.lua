-- policy_reload_spec.lua - hot reload: a new revision is validated and
-- prepared before one swap; failures keep the last good revision; inotify
-- (with ConfigMap ..data flips), SIGHUP and the periodic rescan trigger it.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"

local function tier_policy(value, extra)
  return P.policy("tier", { "tier.example.com" },
    string.format('    %s\n    return { ["tier.example.com/tier"] = %q }', extra or "", value))
end

local nodes_yaml = P.nodes_yaml

local function sleep(s) os.execute("sleep " .. s) end

local function tier_of(g, node, dev)
  local d = g:device("gpu.example.com", node or "node-1", dev or "gpu-0")
  return d.derived and d.derived["tier.example.com/tier"]
end

describe("policy reload", function()
  local g, host, dir

  before_each(function()
    g = core.graph()
    g:apply(nodes_yaml(4, 8))
    dir = P.dir({ ["tier.lua"] = tier_policy("silver") })
  end)

  after_each(function()
    if host then host:close() end
    host, g = nil, nil
    P.rm(dir)
  end)

  it("swaps in a new revision, whose facts are published in the same call", function()
    host = core.policy_host(g, dir)
    local r1 = host:revision()
    assert.are.equal("silver", tier_of(g))
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    local c = host:reload()
    assert.is_true(c.swapped)
    assert.is_false(c.failed)
    assert.are.equal(32, c.swap_changed)
    assert.are_not.equal(r1, host:revision())
    assert.are.equal("gold", tier_of(g))
    assert.are.equal("gold", tier_of(g, "node-4", "gpu-7"))
    assert.are.equal(1, host:stats().swaps)
  end)

  it("keeps the last good revision when the new one does not load, and says where", function()
    host = core.policy_host(g, dir)
    local r1 = host:revision()
    P.write(dir, { ["tier.lua"] = "return {\n  name = 'tier',\n  version = ,\n}\n" })
    local c = host:reload()
    assert.is_false(c.swapped)
    assert.is_true(c.failed)
    assert.are.equal(dir .. "/tier.lua", c.file)
    assert.are.equal(3, c.line)
    assert.are.equal(r1, host:revision())
    assert.are.equal("silver", tier_of(g))
    local logs = host:logs()
    assert.truthy(logs[#logs]:find("policy reload refused", 1, true), logs[#logs])
    assert.truthy(logs[#logs]:find("stays active", 1, true))
    assert.are.equal(1, host:stats().reloads_failed)
  end)

  it("refuses a revision whose hooks fail on the current devices (strict)", function()
    host = core.policy_host(g, dir)
    P.write(dir, { ["tier.lua"] = tier_policy("gold", "if device.name == 'gpu-5' then error('cannot tier ' .. device.name) end") })
    local c = host:reload()
    assert.is_true(c.failed)
    assert.truthy(c.error:find("cannot tier gpu-5", 1, true), c.error)
    assert.are.equal("silver", tier_of(g))
  end)

  it("refuses a revision whose pack specs fail, when asked to run them", function()
    P.rm(dir)
    dir = P.dir({
      ["pack.lua"] = [[return { name = "t", version = "1.0.0", policies = { "tier.lua" }, domains = { "tier.example.com" } }]],
      ["tier.lua"] = tier_policy("silver"),
      ["spec/tier_spec.lua"] = [[
describe("tier", function()
  it("is silver", function()
    local p = dra.test.policy("tier.lua")
    assert.are.equal("silver", p:derive(dra.test.device { driver = "x.example.com" })["tier.example.com/tier"])
  end)
end)]],
    })
    host = core.policy_host(g, dir, { run_specs = true })
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    local c = host:reload()
    assert.is_true(c.failed)
    assert.truthy(c.error:find("1 of 1 pack spec tests failed", 1, true), c.error)
    assert.are.equal("silver", tier_of(g))
  end)

  it("prepares over several cycles while the old revision keeps serving", function()
    g:apply(nodes_yaml(40, 32))
    host = core.policy_host(g, dir, { slice_ms = 0.000001, rescan_ms = 1 })
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    sleep(0.01)
    local cycles, swapped = 0, nil
    for i = 1, 1000 do
      local c = host:cycle()
      cycles = i
      if c.swapped then swapped = c; break end
      assert.is_false(c.failed)
      if c.preparing then assert.are.equal("silver", tier_of(g, "node-40", "gpu-31")) end
    end
    assert.is_not_nil(swapped)
    assert.is_true(cycles > 2, "preparation took " .. cycles .. " cycles")
    assert.are.equal("gold", tier_of(g, "node-40", "gpu-31"))
    assert.is_true(swapped.prepare_ms > 0)
  end)

  it("does nothing when a trigger finds the same content", function()
    host = core.policy_host(g, dir, { rescan_ms = 1 })
    local r1 = host:revision()
    sleep(0.01)
    local c = host:cycle()
    assert.is_false(c.swapped)
    assert.is_false(c.failed)
    assert.are.equal(r1, host:revision())
    assert.are.equal(0, host:stats().swaps)
  end)

  it("does not retry content that failed until it changes", function()
    host = core.policy_host(g, dir, { rescan_ms = 1 })
    P.write(dir, { ["tier.lua"] = "syntax error here" })
    sleep(0.01)
    assert.is_true(host:cycle().failed)
    sleep(0.01)
    assert.is_false(host:cycle().failed)
    assert.are.equal(1, host:stats().reloads_failed)
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    sleep(0.01)
    assert.is_true(host:cycle().swapped)
  end)

  it("reloads on inotify events after the debounce", function()
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 50 })
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    assert.is_false(host:cycle().swapped) -- within the debounce
    sleep(0.1)
    assert.is_true(host:cycle().swapped)
    assert.are.equal("gold", tier_of(g))
  end)

  it("follows a ConfigMap volume's ..data symlink flip", function()
    P.rm(dir)
    dir = P.dir({ ["..2026_01_01_00_00_00.000000001/tier.lua"] = tier_policy("silver") })
    assert(os.execute("cd " .. P.q(dir) .. " && ln -s ..2026_01_01_00_00_00.000000001 ..data && ln -s ..data/tier.lua tier.lua"))
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 50 })
    assert.are.equal("silver", tier_of(g))
    -- the kubelet: write a new timestamped directory, then rename a new link over ..data
    P.write(dir, { ["..2026_01_02_00_00_00.000000002/tier.lua"] = tier_policy("gold") })
    assert(os.execute("cd " .. P.q(dir) .. " && ln -s ..2026_01_02_00_00_00.000000002 ..data_tmp && mv -T ..data_tmp ..data"))
    -- the serving loop cycles often: the first cycle sees the events, the
    -- one after the quiet period reloads
    assert.is_false(host:cycle().swapped)
    sleep(0.1)
    local c = host:cycle()
    assert.is_true(c.swapped)
    assert.are.equal("gold", tier_of(g))
  end)

  it("reloads on SIGHUP", function()
    core.policy_install_sighup()
    host = core.policy_host(g, dir)
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    assert.is_false(host:cycle().swapped)
    local pid = assert(io.open("/proc/self/stat")):read("n")
    assert(os.execute("kill -HUP " .. pid))
    assert.is_true(host:cycle().swapped)
    assert.are.equal("gold", tier_of(g))
  end)

  it("reloads on the periodic content rescan", function()
    host = core.policy_host(g, dir, { rescan_ms = 20 })
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    sleep(0.05)
    assert.is_true(host:cycle().swapped)
  end)

  it("hashes directory content, not timestamps", function()
    local h1 = core.policy_dir_hash(dir)
    assert(os.execute("touch " .. P.q(dir .. "/tier.lua")))
    assert.are.equal(h1, core.policy_dir_hash(dir))
    P.write(dir, { ["tier.lua"] = tier_policy("gold") })
    assert.are_not.equal(h1, core.policy_dir_hash(dir))
  end)
end)
