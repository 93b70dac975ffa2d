-- policy_ci_spec.lua - the GitHub Actions-style example of a policy
-- repository (examples/gitops-ci): its gate script, run as the workflow runs
-- it, passes a good revision, reports its changes for review, and fails the
-- job on a revision that lint, the specs or the snapshot refuse.
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local core = require "draengine.core"

local EX = H.root .. "/examples/gitops-ci"
local GATE = EX .. "/ci/policy-gate.sh"
local SNAP = EX .. "/snapshots/cluster.yaml"

local dirs = {}
local function tmp() local d = P.dir({}); dirs[#dirs + 1] = d; return d end
teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

-- The example's policies copied, with files replaced.
local function revision(files)
  local d = tmp()
  assert(os.execute("cp -r " .. P.q(EX .. "/policies") .. "/. " .. P.q(d)))
  P.write(d, files or {})
  return d
end

-- Run the gate as the workflow does; returns its exit code, output and reports.
local function gate(base, head)
  local out = tmp()
  local cmd = string.format("cd %s && DRAENGINE=%s OUT=%s %s %s %s %s >%s/stdout 2>%s/stderr", P.q(EX), P.q(H.bin),
    P.q(out), P.q(GATE), P.q(base), P.q(head), P.q(SNAP), P.q(out), P.q(out))
  local ok, _, code = os.execute(cmd)
  local rc = ok == true and 0 or code
  local function read(name)
    local f = io.open(out .. "/" .. name, "rb")
    if not f then return nil end
    local s = f:read("a"); f:close(); return s
  end
  return rc, read("stdout") .. read("stderr"), read
end

local TIER = H.read_file(EX .. "/policies/tiers/gpu-tier.lua")

describe("examples/gitops-ci: the policy gate", function()
  it("passes the repository as it is, with every report", function()
    local rc, log, read = gate(EX .. "/policies", EX .. "/policies")
    assert.are.equal(0, rc, log)
    assert.truthy(log:find("policy gate: lint exit 0, specs exit 0, diff exit 0", 1, true), log)
    assert.truthy(read("lint.txt"):find("0 errors", 1, true))
    assert.truthy(read("junit.xml"):find('<testsuites name="draengine policy test ' .. EX .. '/policies" tests="3" ' ..
      'failures="0"', 1, true), read("junit.xml"))
    assert.truthy(read("diff.md"):find(":white_check_mark:", 1, true), read("diff.md"))
    assert.is_false(core.json_decode(read("diff.json")).refused)
  end)

  it("reports a good change for review and lets it merge", function()
    -- gold from 24 GiB: node-b's GPUs change tier
    local head = revision({ ["tiers/gpu-tier.lua"] = TIER:gsub('"80Gi"', '"24Gi"') })
    P.write(head, { ["tiers/spec/gpu_tier_spec.lua"] = H.read_file(EX .. "/policies/tiers/spec/gpu_tier_spec.lua")
      :gsub('assert.are.equal%("silver", p:derive%(gpu%("24Gi"%)%)', 'assert.are.equal("silver", p:derive(gpu("16Gi"))') })
    local rc, log, read = gate(EX .. "/policies", head)
    assert.are.equal(0, rc, log)
    local md = read("diff.md")
    assert.truthy(md:find('- **~** `tier.example.com/tier`: `"silver"` -> `"gold"` on 4 `gpu.example.com` devices', 1, true), md)
    assert.are.equal(4, core.json_decode(read("diff.json")).summary.devicesChanged)
  end)

  it("fails the job on a revision whose hooks fail on the cluster's devices, though its specs pass", function()
    -- the snapshot's GPUs publish no `model`; the spec's test devices do
    local head = revision({
      ["tiers/gpu-tier.lua"] = TIER:gsub('local memory = device.capacity.memory',
        'local memory = device.capacity.memory\n    if device.attributes.model:lower():find("a100") then return nil end'),
      ["tiers/spec/gpu_tier_spec.lua"] = [[
describe("gpu-tier", function()
  local p = dra.test.policy("gpu-tier.lua")
  it("is gold from 80 GiB", function()
    local d = dra.test.device { driver = "gpu.example.com", attributes = { model = "H100" }, capacity = { memory = "80Gi" } }
    assert.are.same({ ["tier.example.com/tier"] = "gold" }, p:derive(d))
  end)
end)]],
    })
    local rc, log, read = gate(EX .. "/policies", head)
    assert.are.equal(2, rc, log)
    assert.truthy(log:find("lint exit 0, specs exit 0, diff exit 2", 1, true), log)
    assert.truthy(log:find("policy gate: refused", 1, true), log)
    local md = read("diff.md")
    assert.truthy(md:find(":x: **Refused**", 1, true), md)
    assert.truthy(md:find("attempt to index a nil value (field 'model')", 1, true), md)
    local doc = core.json_decode(read("diff.json"))
    assert.is_true(doc.refused)
    assert.are.equal(8, doc.failures.devices)
  end)

  it("fails the job on lint errors and on failing specs", function()
    local head = revision({ ["tiers/gpu-tier.lua"] = TIER:gsub("local function tier", "cache = {}\nlocal function tier") })
    local rc, log = gate(EX .. "/policies", head)
    assert.is_true(rc ~= 0, log)
    assert.truthy(log:find("assignment to global 'cache'", 1, true), log)
    head = revision({ ["tiers/gpu-tier.lua"] = TIER:gsub('return "silver"', 'return "bronze"') })
    local rc2, log2, read = gate(EX .. "/policies", head)
    assert.are.equal(1, rc2, log2)
    assert.truthy(log2:find("specs exit 1", 1, true), log2)
    assert.truthy(read("junit.xml"):find("<failure", 1, true))
  end)

  it("is what the workflows run", function()
    local wf = core.yaml_decode(H.read_file(EX .. "/.github/workflows/policy-gate.yaml"))[1]
    local steps = wf.jobs.gate.steps
    local run = {}
    for _, s in ipairs(steps) do if s.run then run[#run + 1] = s.run end end
    local all = table.concat(run, "\n")
    assert.truthy(all:find("ci/policy-gate.sh .base/policies policies snapshots/cluster.yaml", 1, true), all)
    assert.truthy(all:find("gate-out/diff.md", 1, true), all)
    local rs = core.yaml_decode(H.read_file(EX .. "/.github/workflows/refresh-snapshot.yaml"))[1]
    local snap = {}
    for _, s in ipairs(rs.jobs.snapshot.steps) do if s.run then snap[#snap + 1] = s.run end end
    assert.truthy(table.concat(snap, "\n"):find("draengine snapshot --kubeconfig", 1, true))
    -- the snapshot in the example loads as every command takes it
    local rc, out = H.run({ "inspect", "-f", SNAP, "--policies", EX .. "/policies" })
    assert.are.equal(0, rc)
    assert.truthy(out:find("derived by gpu-tier: tier.example.com/tier=gold", 1, true), out)
  end)
end)
