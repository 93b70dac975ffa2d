-- policy_tooling_spec.lua - draengine policy test|lint|diff|bench|list, and
-- the in-sandbox spec runner behind `policy test`.
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local core = require "draengine.core"

local POL = H.root .. "/policies"
local FIX = POL .. "/spec/fixtures/"
local SPECFIX = H.root .. "/spec/fixtures/policy/"

local PACK = [[return { name = "tiers", version = "1.0.0", policies = { "tier.lua" }, domains = { "tier.example.com" } }]]
local TIER = P.policy("tier", { "tier.example.com" }, [[
    local mem = device.capacity.memory
    if mem and mem >= "75Gi" then return { ["tier.example.com/tier"] = "gold" } end
    return { ["tier.example.com/tier"] = "silver" }]])

local dirs = {}
local function mk(files) local d = P.dir(files); dirs[#dirs + 1] = d; return d end
teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

describe("draengine policy test", function()
  it("runs busted-style specs inside the sandbox and exits 0 when all pass", function()
    local d = mk({
      ["tiers/pack.lua"] = PACK,
      ["tiers/tier.lua"] = TIER,
      ["tiers/spec/tier_spec.lua"] = [[
local p = dra.test.policy("tier.lua")
describe("tier", function()
  local calls = 0
  before_each(function() calls = calls + 1 end)
  it("is gold at 80Gi", function()
    local d = dra.test.device { driver = "gpu.example.com", capacity = { memory = "80Gi" } }
    assert.are.same({ ["tier.example.com/tier"] = "gold" }, p:derive(d))
  end)
  it("is silver below", function()
    local d = dra.test.device { driver = "gpu.example.com", capacity = { memory = "24Gi" } }
    assert.are.equal("silver", p:derive(d)["tier.example.com/tier"])
    assert.are.equal(2, calls)
  end)
  it("has no io in the sandbox", function()
    assert.has_error(function() return io.open("/etc/passwd") end, "undeclared global 'io'")
    assert.is_not.equal(nil, p.revision)
  end)
  pending("a test for later")
end)]],
    })
    local rc, out, err = H.run({ "policy", "test", d, "-v" })
    assert.are.equal(0, rc, out .. err)
    assert.truthy(out:find("ok      " .. d .. "/tiers/spec/tier_spec.lua:5  tier is gold at 80Gi", 1, true), out)
    assert.truthy(out:find("pending", 1, true), out)
    assert.truthy(out:find("\n3 passed, 0 failed\n$"), out)
  end)

  it("names specs under a deep directory by their full path, in results and failures", function()
    -- Lua cuts chunk names to 60 bytes (".../tail"); CI checkouts are deeper
    local deep = string.rep("a-long-directory-name/", 4) .. "policies"
    local d = mk({
      [deep .. "/tiers/pack.lua"] = PACK,
      [deep .. "/tiers/tier.lua"] = TIER,
      [deep .. "/tiers/spec/deep_spec.lua"] = [[
describe("deep", function()
  it("passes", function() assert.is_true(true) end)
  it("fails", function() assert.are.equal(3, 1 + 1) end)
end)]],
    })
    local rc, out = H.run({ "policy", "test", d .. "/" .. deep, "-v" })
    assert.are.equal(1, rc, out)
    local file = d .. "/" .. deep .. "/tiers/spec/deep_spec.lua"
    assert.truthy(#file > 60)
    assert.truthy(out:find("ok      " .. file .. ":2  deep passes", 1, true), out)
    assert.truthy(out:find(file .. ":3", 1, true), out)
    assert.falsy(out:find("...", 1, true), out)
  end)

  it("exits 1 on a failing test, with the failing line", function()
    local d = mk({
      ["spec/a_spec.lua"] = [[
describe("math", function()
  it("fails", function()
    assert.are.equal(3, 1 + 1)
  end)
  it("passes", function() assert.is_true(true) end)
end)]],
      ["tier.lua"] = TIER,
    })
    local rc, out = H.run({ "policy", "test", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find("FAIL    " .. d .. "/spec/a_spec.lua:2  math fails", 1, true), out)
    assert.truthy(out:find("a_spec.lua:3: expected 3, got 2", 1, true), out)
    assert.truthy(out:find("1 passed, 1 failed", 1, true), out)
  end)

  it("exits 1 when there are no tests", function()
    local d = mk({ ["tier.lua"] = TIER })
    local rc, out, err = H.run({ "policy", "test", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find("0 passed, 0 failed", 1, true), out)
    assert.truthy(err:find("no tests found", 1, true), err)
  end)

  it("exits 2 when the policies themselves are invalid", function()
    local d = mk({ ["bad.lua"] = "return {", ["spec/x_spec.lua"] = "it('x', function() end)" })
    local rc, _, err = H.run({ "policy", "test", d })
    assert.are.equal(2, rc)
    assert.truthy(err:find(d .. "/bad.lua:1:", 1, true), err)
  end)

  it("contains a looping test to that test, with a fresh VM per file", function()
    local d = mk({
      ["tier.lua"] = TIER,
      ["spec/a_spec.lua"] = [[
it("loops", function() while true do end end)
it("still runs after the loop", function() assert.is_true(true) end)]],
      ["spec/b_spec.lua"] = [[
it("sees a fresh VM", function() assert.has_error(function() return leaked end, "undeclared global 'leaked'") end)]],
    })
    local rc, out = H.run({ "policy", "test", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find("instruction budget exceeded", 1, true), out)
    assert.truthy(out:find("2 passed, 1 failed", 1, true), out)
  end)

  it("loads snapshot fixtures and refuses paths outside the directory", function()
    local d = mk({
      ["tier.lua"] = TIER,
      ["spec/fixtures/h100.yaml"] = H.read_file(FIX .. "eks-h100x8.yaml"),
      ["spec/s_spec.lua"] = [[
describe("snapshot", function()
  it("has 16 GPUs, all gold", function()
    local snap = dra.test.snapshot("spec/fixtures/h100.yaml")
    local p = dra.test.policy("tier.lua")
    local n = 0
    for _, dev in ipairs(snap.devices) do
      if dev.driver == "gpu.nvidia.com" then
        n = n + 1
        assert.are.equal("gold", p:derive(dev)["tier.example.com/tier"])
      end
    end
    assert.are.equal(16, n)
  end)
  it("cannot leave the directory", function()
    assert.has_error(function() dra.test.snapshot("../../etc") end, "must be relative to the directory under test")
    assert.has_error(function() dra.test.policy("/etc/passwd") end, "must be relative")
  end)
end)]],
    })
    local rc, out = H.run({ "policy", "test", d })
    assert.are.equal(0, rc, out)
  end)

  it("passes on the shipped policies", function()
    local rc, out = H.run({ "policy", "test", POL })
    assert.are.equal(0, rc, out)
    local passed = tonumber(out:match("(%d+) passed, 0 failed"))
    assert.is_true(passed >= 20)
  end)

  it("is available to specs through core.policy_test", function()
    local r = core.policy_test(POL)
    assert.are.equal(0, r.failed)
    assert.are.equal(r.passed, #r.results - r.pending)
    for _, t in ipairs(r.results) do assert.are.equal("ok", t.status, t.name) end
  end)
end)

describe("draengine policy lint", function()
  it("is clean on the shipped policies", function()
    local rc, out = H.run({ "policy", "lint", POL })
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("0 errors", 1, true), out)
  end)

  it("finds undeclared globals, global writes and missing library fields with their lines", function()
    local d = mk({ ["p.lua"] = [[
local P = require "draengine.policy"
counter = 0
local function helper(x)
  return string.dump(x) or prnt(x)
end
return {
  name = "p", version = "1.0.0", api = 1, domains = { "p.example.com" },
  derive = function(device)
    local _ENV = { tostring = tostring }
    return { ["p.example.com/x"] = tostring(os) }
  end,
}
]] })
    local rc, out = H.run({ "policy", "lint", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find(d .. "/p.lua:2: error: assignment to global 'counter'", 1, true), out)
    assert.truthy(out:find(d .. "/p.lua:4: error: 'string.dump' is not available in the policy sandbox", 1, true), out)
    assert.truthy(out:find(d .. "/p.lua:4: error: undeclared global 'prnt'", 1, true), out)
    -- `os` under a local _ENV is not a sandbox global read
    assert.falsy(out:find("'os'", 1, true), out)
  end)

  it("reports syntax errors and metadata with file:line", function()
    local d = mk({ ["s.lua"] = "return {\n  name = 'x'\n  version = '1.0.0',\n}\n" })
    local rc, out = H.run({ "policy", "lint", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find(d .. "/s.lua:3: error: syntax error:", 1, true), out)
    local d2 = mk({ ["m.lua"] = "return {\n  name = 'x',\n  version = 'one',\n  api = 1, domains = {},\n  score = function() return 0 end }\n" })
    rc, out = H.run({ "policy", "lint", d2 })
    assert.are.equal(1, rc)
    assert.truthy(out:find(d2 .. "/m.lua:3: error: policy: version \"one\" is not a semantic version", 1, true), out)
  end)

  it("knows the spec globals in spec files", function()
    local d = mk({ ["tier.lua"] = TIER,
                   ["spec/t_spec.lua"] = "describe('x', function() it('y', function() assert.is_true(dra.test ~= nil) end) end)" })
    local rc, out = H.run({ "policy", "lint", d })
    assert.are.equal(0, rc, out)
  end)

  it("is exposed as core.policy_lint", function()
    local r = core.policy_lint(POL)
    assert.is_true(r.ok)
    assert.are.equal(0, #r.problems)
  end)
end)

describe("draengine policy diff", function()
  it("prints derived attribute and allocation changes between two revisions", function()
    local empty = mk({})
    local args = { "policy", "diff", "--from", empty, "--to", POL, "--node", "10.140.65.248",
                   "-f", FIX .. "oci-gb200.yaml", "-f", SPECFIX .. "gb200-numa-claim.yaml" }
    local rc, out, err = H.run(args)
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("derived attributes: 12 devices changed", 1, true), out)
    -- grouped by attribute and driver, the values under the group when they differ
    assert.truthy(out:find("\n  + resource.kubernetes.io/numaNode on 4 gpu.nvidia.com devices\n" ..
      "      gpu.nvidia.com/10.140.65.248/gpu-0 = 0\n", 1, true), out)
    assert.truthy(out:find("      gpu.nvidia.com/10.140.65.248/gpu-2 = 1\n", 1, true), out)
    assert.truthy(out:find("\n  + resource.kubernetes.io/numaNode on 8 dra.net devices\n", 1, true), out)
    -- and in the group line when they agree
    assert.truthy(out:find("\n  + tier.draengine.io/class = \"h200-class\" on 4 gpu.nvidia.com devices\n", 1, true), out)
    assert.truthy(out:find("  1 claim becomes schedulable: default/gpu-nic-numa\n" ..
      "    default/gpu-nic-numa: 10.140.65.248 [gpu.nvidia.com/10.140.65.248/gpu-2,dra.net/", 1, true), out)
    -- deterministic: same bytes twice
    local rc2, out2 = H.run(args)
    assert.are.equal(rc, rc2)
    assert.are.equal(out, out2)
    -- and the reverse
    local rc3, out3 = H.run({ "policy", "diff", "--from", POL, "--to", empty, "--node", "10.140.65.248",
                              "-f", FIX .. "oci-gb200.yaml", "-f", SPECFIX .. "gb200-numa-claim.yaml", "--exit-code" })
    assert.are.equal(1, rc3)
    assert.truthy(out3:find("  - resource.kubernetes.io/numaNode on 4 gpu.nvidia.com devices\n" ..
      "      gpu.nvidia.com/10.140.65.248/gpu-0 (was 0)\n", 1, true), out3)
    assert.truthy(out3:find("  - tier.draengine.io/tier (was \"platinum\") on 4 gpu.nvidia.com devices", 1, true), out3)
    assert.truthy(out3:find("1 claim becomes unschedulable: default/gpu-nic-numa", 1, true), out3)
  end)

  it("replays pending claims through the scheduler when no node is given, as JSON", function()
    local empty = mk({})
    local rc, out, err = H.run({ "policy", "diff", "--from", empty, "--to", POL, "-o", "json",
                                 "-f", FIX .. "oci-gb200.yaml", "-f", SPECFIX .. "gb200-numa-claim.yaml" })
    assert.are.equal(0, rc, err)
    local doc = core.json_decode(out)
    assert.are.equal(12, doc.summary.devicesChanged)
    assert.are.equal(1, doc.summary.claimsSchedulable)
    assert.are.equal(0, doc.summary.devicesWithHookFailures)
    assert.is_false(doc.refused)
    assert.are.equal(core.null, doc.failures)
    assert.are.equal("schedulable", doc.claims[1].change)
    assert.are.equal("10.140.65.248", doc.claims[1].to.node)
    assert.are.same({ "gpu.nvidia.com/10.140.65.248/gpu-2", "dra.net/10.140.65.248/pci-0010-03-00-0" },
      doc.claims[1].to.devices)
    -- values typed as they are: a string is a string, an int a number
    local by = {}
    for _, d in ipairs(doc.devices) do by[d.device] = d end
    local gpu2 = by["gpu.nvidia.com/10.140.65.248/gpu-2"]
    local seen = {}
    for _, c in ipairs(gpu2.changes) do seen[c.attribute] = c end
    assert.are.equal(1, seen["resource.kubernetes.io/numaNode"].to)
    assert.are.equal("int", seen["resource.kubernetes.io/numaNode"].type)
    assert.are.equal("h200-class", seen["tier.draengine.io/class"].to)
    assert.are.equal("string", seen["tier.draengine.io/class"].type)
    assert.are.equal("added", seen["tier.draengine.io/class"].change)
    -- the groups, as the text shows them
    local g1 = doc.attributes[1]
    assert.are.same({ change = "added", attribute = "resource.kubernetes.io/numaNode", driver = "dra.net",
                      deviceCount = 8 }, g1)
    -- camelCase keys everywhere (Kubernetes JSON style)
    local function keys(v, path)
      if type(v) ~= "table" then return end
      for k, x in pairs(v) do
        if type(k) == "string" then assert.falsy(k:find("_", 1, true), "snake_case key " .. path .. "." .. k) end
        keys(x, path .. "." .. tostring(k))
      end
    end
    keys(doc, "")
  end)

  it("shows nothing between identical revisions", function()
    local rc, out = H.run({ "policy", "diff", "--from", POL, "--to", POL, "--exit-code", "-f", FIX .. "eks-h100x8.yaml" })
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("derived attributes: 0 devices changed", 1, true), out)
  end)

  it("needs its inputs", function()
    local rc, _, err = H.run({ "policy", "diff", "--from", POL })
    assert.are.equal(2, rc)
    assert.truthy(err:find("needs --from DIR --to DIR -f SNAPSHOT", 1, true), err)
  end)
end)

describe("draengine policy bench and list", function()
  it("prints ns and instructions per hook call", function()
    local rc, out, err = H.run({ "policy", "bench", POL, "-f", FIX .. "oci-gb200.yaml", "--iterations", "2" })
    assert.are.equal(0, rc, err)
    local seen = {}
    for name, hook, calls, ns, instr in out:gmatch("\n(%S+)%s+(%a+)%s+(%d+)%s+([%d.]+)%s+([%d.]+)") do
      seen[name .. "/" .. hook] = { calls = tonumber(calls), ns = tonumber(ns), instr = tonumber(instr) }
    end
    assert.is_not_nil(seen["numa-bridge/derive"], out)
    assert.are.equal(12, seen["numa-bridge/derive"].calls)
    assert.is_true(seen["numa-bridge/derive"].instr > 0)
    assert.are.equal(4, seen["gpu-tiers/derive"].calls) -- drivers filter: GPUs only
    assert.is_not_nil(seen["mig-compat/groups"])
    assert.is_not_nil(seen["binpack/score"])
  end)

  it("lists policies with revisions and domains", function()
    local rc, out = H.run({ "policy", "list", POL })
    assert.are.equal(0, rc)
    assert.truthy(out:find("numa%-bridge 1%.0%.0  %x+  .-numa%-bridge%.lua  hooks: derive  domains: resource%.kubernetes%.io/numaNode"), out)
  end)
end)

describe("the README's worked example (examples/policy-pack)", function()
  local PACK = H.root .. "/examples/policy-pack"

  it("lints and tests clean", function()
    local rc, out = H.run({ "policy", "lint", PACK })
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("3 files, 0 errors, 0 warnings", 1, true), out)
    rc, out = H.run({ "policy", "test", PACK })
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("3 passed, 0 failed", 1, true), out)
  end)

  it("makes the research claim unschedulable in the diff, and nothing else", function()
    local next_dir = P.dir({})
    dirs[#dirs + 1] = next_dir
    assert(os.execute("cp -r " .. P.q(POL) .. "/. " .. P.q(next_dir) .. " && cp -r " .. P.q(PACK) .. " " ..
      P.q(next_dir .. "/gold-quota")))
    local rc, out, err = H.run({ "policy", "diff", "--from", POL, "--to", next_dir, "-f", FIX .. "eks-h100x8.yaml",
                                 "-f", PACK .. "/spec/fixtures/claims.yaml" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("derived attributes: 0 devices changed", 1, true), out)
    assert.truthy(out:find("1 claim becomes unschedulable: research/experiment\n    research/experiment (was gpu-node-1", 1, true), out)
    assert.truthy(out:find("class gold-gpu is reserved for the namespaces prod and ml-prod", 1, true), out)
    assert.truthy(out:find("0 claims allocated differently, 1 become unschedulable, 0 become schedulable", 1, true), out)
  end)
end)
