-- harden_reload_spec.lua - hot reload keeps working after the first reload:
-- several changes in a row, each applied after the debounce alone (no
-- SIGHUP, no rescan), through plain writes, ConfigMap `..data` flips the
-- way the kubelet makes them, new pack folders, a symlinked root flipped
-- git-sync style, and changes made while a revision is being prepared.
-- Then the same through `allocate --watch` and `serve --policy-dir`.
local core = require "draengine.core"
local P = require "fixtures.policy.helper"
local H = require "support.helper"

local SLOW = H.asan and 3 or 1

local function tier_policy(value)
  return P.policy("tier", { "tier.example.com" }, string.format('    return { ["tier.example.com/tier"] = %q }', value))
end

local nodes_yaml = P.nodes_yaml

local function sleep(s) os.execute("sleep " .. s) end
local function sh(cmd) assert(os.execute("bash -c " .. P.q("set -e\n" .. cmd)), cmd) end

local function derived(g, key)
  local d = g:device("gpu.example.com", "node-1", "gpu-0")
  return d.derived and d.derived[key]
end

-- Cycle like serve's loop (every 20 ms) until a swap, for at most `secs`;
-- returns the cycle that swapped, and how many cycles it took.
local function cycle_until_swap(host, secs)
  local n = 0
  local tries = math.floor((secs or 3) / 0.02)
  for _ = 1, tries do
    n = n + 1
    local c = host:cycle()
    assert.is_false(c.failed, c.error)
    if c.swapped then return c, n end
    sleep(0.02)
  end
  return nil, n
end

-- the kubelet's AtomicWriter: a new timestamped directory with the payload,
-- a ..data_tmp link renamed over ..data, the user-visible links of new keys
-- created and those of removed keys deleted, the old directory removed
local function kubelet_update(dir, stamp, files)
  local ts = "..2026_01_01_00_00_00." .. stamp
  local names = {}
  for name, text in pairs(files) do
    P.write(dir, { [ts .. "/" .. name] = text })
    names[#names + 1] = name
  end
  table.sort(names)
  local old = io.popen("readlink " .. P.q(dir .. "/..data") .. " 2>/dev/null"):read("l")
  local script = { "cd " .. P.q(dir), "ln -s " .. ts .. " ..data_tmp", "mv -T ..data_tmp ..data" }
  for _, name in ipairs(names) do
    script[#script + 1] = "[ -L " .. P.q(name) .. " ] || ln -s ..data/" .. P.q(name) .. " " .. P.q(name)
  end
  script[#script + 1] = "for l in *.lua; do [ -e \"$l\" ] || rm -f \"$l\"; done"
  if old and old ~= "" then script[#script + 1] = "rm -rf " .. P.q(old) end
  sh(table.concat(script, "\n"))
end

describe("policy reload, again and again", function()
  local g, host, dir

  before_each(function()
    g = core.graph()
    g:apply(nodes_yaml(2, 4))
  end)

  after_each(function()
    if host then host:close() end
    host, g = nil, nil
    P.rm(dir)
  end)

  it("applies every one of several edits after the debounce, with no SIGHUP and no rescan", function()
    dir = P.dir({ ["tier.lua"] = tier_policy("v0") })
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 60, rescan_ms = 0 })
    assert.are.equal("v0", derived(g, "tier.example.com/tier"))
    for i = 1, 6 do
      P.write(dir, { ["tier.lua"] = tier_policy("v" .. i) })
      local c, n = cycle_until_swap(host, 3 * SLOW)
      assert.truthy(c, "edit " .. i .. " was never applied")
      assert.is_true(n >= 2, "swapped before the debounce") -- the first cycle only sees the events
      assert.are.equal("v" .. i, derived(g, "tier.example.com/tier"))
      -- and then the directory is quiet: no further reload from the reload itself
      for _ = 1, 8 do
        assert.is_false(host:cycle().swapped)
        sleep(0.02)
      end
    end
    assert.are.equal(7, host:stats().reloads_ok)
  end)

  it("follows several ConfigMap ..data flips in a row, keys added and removed", function()
    dir = P.dir({})
    kubelet_update(dir, "000000001", { ["tier.lua"] = tier_policy("flip-1") })
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 60, rescan_ms = 0 })
    assert.are.equal("flip-1", derived(g, "tier.example.com/tier"))
    for i = 2, 5 do
      local files = { ["tier.lua"] = tier_policy("flip-" .. i) }
      -- every other revision carries a second policy, so keys come and go
      if i % 2 == 0 then
        files["extra.lua"] = P.policy("extra", { "extra.example.com" },
          string.format('    return { ["extra.example.com/n"] = %d }', i))
      end
      kubelet_update(dir, string.format("%09d", i), files)
      assert.truthy(cycle_until_swap(host, 3 * SLOW), "flip " .. i .. " was never applied")
      assert.are.equal("flip-" .. i, derived(g, "tier.example.com/tier"))
      assert.are.equal(i % 2 == 0 and i or nil, derived(g, "extra.example.com/n"))
    end
  end)

  it("watches a pack folder created after the start, then its edits", function()
    dir = P.dir({ ["tier.lua"] = tier_policy("base") })
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 60, rescan_ms = 0 })
    P.write(dir, {
      ["pack/pack.lua"] = [[return { name = "pk", version = "1.0.0", domains = { "pk.example.com" }, policies = { "p.lua" } }]],
      ["pack/p.lua"] = P.policy("p", { "pk.example.com" }, '    return { ["pk.example.com/v"] = "one" }'),
    })
    assert.truthy(cycle_until_swap(host, 3 * SLOW), "the new pack was never loaded")
    assert.are.equal("one", derived(g, "pk.example.com/v"))
    for _, v in ipairs({ "two", "three" }) do
      -- an edit inside the folder: only the folder's own watch sees it
      P.write(dir, { ["pack/p.lua"] = P.policy("p", { "pk.example.com" }, '    return { ["pk.example.com/v"] = "' .. v .. '" }') })
      assert.truthy(cycle_until_swap(host, 3 * SLOW), "edit " .. v .. " inside the pack was never applied")
      assert.are.equal(v, derived(g, "pk.example.com/v"))
    end
  end)

  it("follows a symlinked root flipped to new checkouts (git-sync)", function()
    local base = P.dir({
      ["rev-1/tier.lua"] = tier_policy("git-1"),
      ["rev-2/tier.lua"] = tier_policy("git-2"),
      ["rev-3/tier.lua"] = tier_policy("git-3"),
    })
    sh("cd " .. P.q(base) .. " && ln -s rev-1 current")
    dir = base .. "/current"
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 60, rescan_ms = 0 })
    assert.are.equal("git-1", derived(g, "tier.example.com/tier"))
    for i = 2, 3 do
      sh("cd " .. P.q(base) .. " && ln -s rev-" .. i .. " tmp-link && mv -T tmp-link current")
      assert.truthy(cycle_until_swap(host, 3 * SLOW), "flip to rev-" .. i .. " was never applied")
      assert.are.equal("git-" .. i, derived(g, "tier.example.com/tier"))
      -- and edits inside the new checkout are seen too
      P.write(base .. "/rev-" .. i, { ["tier.lua"] = tier_policy("git-" .. i .. "-edited") })
      assert.truthy(cycle_until_swap(host, 3 * SLOW), "edit in rev-" .. i .. " was never applied")
      assert.are.equal("git-" .. i .. "-edited", derived(g, "tier.example.com/tier"))
    end
    dir = nil
    P.rm(base)
  end)

  it("applies a change made while the previous revision was being prepared", function()
    g = core.graph()
    g:apply(nodes_yaml(40, 16))
    dir = P.dir({ ["tier.lua"] = tier_policy("a") })
    -- preparation in small slices: it spans many cycles
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 60, rescan_ms = 0, slice_ms = 0.01 })
    P.write(dir, { ["tier.lua"] = tier_policy("b") })
    local c
    for _ = 1, math.floor(3 * SLOW / 0.02) do
      c = host:cycle()
      if c.preparing or c.swapped then break end
      sleep(0.02)
    end
    assert.is_true(c.preparing, "the preparation of b did not span cycles")
    P.write(dir, { ["tier.lua"] = tier_policy("c") }) -- during the preparation of "b"
    local swaps, last = 0, nil
    for _ = 1, math.floor(5 * SLOW / 0.02) do
      c = host:cycle()
      if c.swapped then swaps = swaps + 1 end
      last = derived(g, "tier.example.com/tier")
      if last == "c" then break end
      sleep(0.02)
    end
    assert.are.equal("c", last)
  end)

  it("keeps waiting while writes go on, and reloads once after they stop", function()
    dir = P.dir({ ["tier.lua"] = tier_policy("w0") })
    host = core.policy_host(g, dir, { watch = true, debounce_ms = 150, rescan_ms = 0 })
    for i = 1, 10 do
      P.write(dir, { ["tier.lua"] = tier_policy("w" .. i) })
      assert.is_false(host:cycle().swapped, "reloaded in the middle of a burst")
      sleep(0.03)
    end
    local c = cycle_until_swap(host, 3 * SLOW)
    assert.truthy(c)
    assert.are.equal("w10", derived(g, "tier.example.com/tier"))
    for _ = 1, 10 do
      assert.is_false(host:cycle().swapped)
      sleep(0.02)
    end
    assert.are.equal(2, host:stats().reloads_ok)
  end)
end)

describe("allocate --watch --policies", function()
  local W = require "support.watch"

  it("re-plans after each of several ConfigMap flips in a row", function()
    local pol = P.dir({})
    local src = H.read_file(H.root .. "/policies/numa-bridge.lua")
    kubelet_update(pol, "000000001", { ["numa-bridge.lua"] = src })
    local fix = H.root .. "/policies/spec/fixtures/oci-gb200.yaml"
    local claim = H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml"
    local p = W.start({ "allocate", "--node", "10.140.65.248", "-f", fix, "-f", claim, "--policies", pol,
      "-o", "json", "--watch" })
    assert.truthy(p:wait_lines(1), p:stderr())
    -- the bridge goes and comes back, four times
    for i = 2, 5 do
      local files = {}
      if i % 2 == 1 then files["numa-bridge.lua"] = src else files["other.lua"] = P.policy("other",
        { "other.example.com" }, "    return {}") end
      kubelet_update(pol, string.format("%09d", i), files)
      assert.truthy(p:wait_lines(i), "flip " .. i .. ": " .. p:stderr())
    end
    local rc, out, err = p:stop()
    assert.are.equal(0, rc, err)
    local n, codes = 0, {}
    for line in out:gmatch("[^\n]+") do
      n = n + 1
      codes[n] = core.json_decode(line).exitCode
    end
    assert.are.same({ 0, 1, 0, 1, 0 }, codes)
    P.rm(pol)
  end)
end)

describe("serve --policy-dir", function()
  local K = require "support.kubeapi"
  local S = require "support.serve"

  it("reloads after each of several ConfigMap flips with the rescan off", function()
    local srv = K.start{ seed = 4 }
    local dir = P.dir({})
    kubelet_update(dir, "000000001", { ["tier.lua"] = tier_policy("s1") })
    srv:load(S.cluster(2, 2))
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", dir, "--policy-rescan=0s" })
    local function reloads()
      local _, m = p:http("/metrics")
      return tonumber((m or ""):match('draengine_policy_reloads_total{result="ok"} (%d+)')) or 0
    end
    K.wait_for(function() return reloads() >= 1 end, 10 * SLOW, 0.1)
    local base = reloads()
    for i = 2, 5 do
      kubelet_update(dir, string.format("%09d", i), { ["tier.lua"] = tier_policy("s" .. i) })
      K.wait_for(function() return reloads() >= base + i - 1 end, 5 * SLOW, 0.05)
      assert.are.equal(base + i - 1, reloads(), "flip " .. i)
    end
    -- and /livez kept answering throughout
    assert.are.equal(200, (p:http("/livez")))
    local reports = S.stop_all({ p })
    srv:stop()
    P.rm(dir)
    assert.are.same({}, reports)
  end)
end)
