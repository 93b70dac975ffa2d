-- policy_verdict_spec.lua - one verdict on a policy revision, on every path.
-- A revision whose derive hook throws on the snapshot's dra.net devices is
-- refused by `policy diff` (exit 2, a failures section), `allocate` (exit 2,
-- nothing decided with it), `allocate --watch` (the last good revision
-- keeps deciding), `inspect` (shown, exit 2), `run` (exit 2) and `serve`
-- (at start after the informers sync, and on reload).  Every case checks
-- that the bad revision decided nothing: a path that adopts it fails here.
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local W = require "support.watch"
local K = require "support.kubeapi"
local S = require "support.serve"
local core = require "draengine.core"

local FIX = H.root .. "/policies/spec/fixtures/oci-gb200.yaml"
local CLAIM = H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml"
local NODE = "10.140.65.248"
local BRIDGE = H.read_file(H.root .. "/policies/numa-bridge.lua")
-- the shipped bridge with one bad line for dra.net NICs: their numaNode
-- goes missing, the GPUs' stays
local BROKEN, BAD_LINE
do
  local head, tail = BRIDGE:match("^(.-derive = function%(device%)\n)(.*)$")
  local _, n = head:gsub("\n", "")
  BAD_LINE = n + 1
  BROKEN = head .. '    if device.driver == "dra.net" then local x = nil; return { [STANDARD] = x.numa } end\n' .. tail
end

local dirs = {}
local function mk(files) local d = P.dir(files); dirs[#dirs + 1] = d; return d end
teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

local function revision(dir)
  local _, out = H.run({ "policy", "list", dir })
  return out:match("revision (%x+)")
end

describe("the verdict on a revision whose hook fails on current devices", function()
  local good, bad
  setup(function()
    good = mk({ ["numa-bridge.lua"] = BRIDGE })
    bad = mk({ ["numa-bridge.lua"] = BROKEN })
  end)

  it("policy diff lists the failures in a section of their own and exits 2", function()
    local rc, out, err = H.run({ "policy", "diff", "--from", good, "--to", bad, "-f", FIX, "-f", CLAIM })
    assert.are.equal(2, rc, err)
    assert.truthy(out:find("REFUSED", 1, true), out)
    assert.truthy(out:find("hook failures: revision " .. revision(bad):sub(1, 12) ..
      " fails on 8 current devices (8 failed calls)\n", 1, true), out)
    assert.truthy(out:find("  policy numa-bridge, hook derive, " .. bad .. "/numa-bridge.lua:" .. BAD_LINE .. ": error: " ..
      "attempt to index a nil value (local 'x')\n", 1, true), out)
    assert.truthy(out:find("    on 8 devices: dra.net/" .. NODE .. "/pci-0000-03-00-0, ", 1, true), out)
    -- the lost facts are not ordinary changes
    assert.truthy(out:find("derived attributes: 0 devices changed", 1, true), out)
    assert.falsy(out:find("- resource.kubernetes.io/numaNode", 1, true), out)
    -- the claim that needs them is explained by the failure
    assert.truthy(out:find("policy numa-bridge failed on 8 of them (their derived attributes are missing)", 1, true), out)
    assert.truthy(err:find("--to " .. bad .. ": policy revision", 1, true), err)
    -- as data
    local rcj, js = H.run({ "policy", "diff", "--from", good, "--to", bad, "-f", FIX, "-f", CLAIM, "-o", "json" })
    assert.are.equal(2, rcj)
    local doc = core.json_decode(js)
    assert.is_true(doc.refused)
    assert.are.equal(8, doc.failures.devices)
    local f = doc.failures.failures[1]
    assert.are.same({ "numa-bridge", "derive", bad .. "/numa-bridge.lua", BAD_LINE, "error", 8 },
      { f.policy, f.hook, f.file, f.line, f.reason, f.deviceCount })
    assert.are.equal(8, #f.devices)
    assert.are.equal(8, doc.summary.devicesWithHookFailures)
    assert.are.equal(0, doc.summary.devicesChanged)
    -- and in the pull-request comment
    local rcm, md = H.run({ "policy", "diff", "--from", good, "--to", bad, "-f", FIX, "-f", CLAIM, "-o", "markdown" })
    assert.are.equal(2, rcm)
    assert.truthy(md:find(":x: **Refused**", 1, true), md)
    assert.truthy(md:find("- **numa-bridge** `derive` at `" .. bad .. "/numa-bridge.lua:" .. BAD_LINE .. "`", 1, true), md)
    -- --exit-code does not lower a refusal to 1
    assert.are.equal(2, (H.run({ "policy", "diff", "--from", good, "--to", bad, "-f", FIX, "--exit-code" })))
  end)

  it("a failing --from revision is reported but does not fail the diff", function()
    local rc, out, err = H.run({ "policy", "diff", "--from", bad, "--to", good, "-f", FIX, "-f", CLAIM })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("the --from revision fails too:", 1, true), out)
    -- the repaired facts are ordinary changes
    assert.truthy(out:find("+ resource.kubernetes.io/numaNode on 8 dra.net devices", 1, true), out)
  end)

  it("allocate refuses it: exit 2, the failures on stderr, nothing allocated", function()
    local rc, out, err = H.run({ "allocate", "--node", NODE, "-f", FIX, "-f", CLAIM, "--policies", bad })
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.truthy(err:find("--policies " .. bad .. ": policy revision " .. revision(bad):sub(1, 12) .. " refused", 1, true), err)
    assert.truthy(err:find("policy numa-bridge, hook derive, " .. bad .. "/numa-bridge.lua:" .. BAD_LINE .. "", 1, true), err)
    -- without --node too (the scheduler path)
    assert.are.equal(2, (H.run({ "allocate", "-f", FIX, "-f", CLAIM, "--policies", bad })))
    -- the good one allocates
    local rcg, outg = H.run({ "allocate", "--node", NODE, "-f", FIX, "-f", CLAIM, "--policies", good, "-o", "json" })
    assert.are.equal(0, rcg)
    assert.are.equal(revision(good),
      core.json_decode(outg).items[1].metadata.annotations["draengine.dev/policy-revision"])
  end)

  it("inspect shows it with its failures and exits 2", function()
    local rc, out = H.run({ "inspect", "-f", FIX, "--policies", bad })
    assert.are.equal(2, rc)
    assert.truthy(out:find("FAILED numa-bridge derive at " .. bad .. "/numa-bridge.lua:" .. BAD_LINE .. ": error:", 1, true), out)
    local rcj, js = H.run({ "inspect", "-f", FIX, "--policies", bad, "-o", "json" })
    assert.are.equal(2, rcj)
    assert.are.equal(8, core.json_decode(js).policies.failures.devices)
  end)

  it("allocate --watch keeps the last good revision deciding", function()
    local pol = mk({ ["numa-bridge.lua"] = BRIDGE })
    local rev = revision(pol)
    local man = mk({ ["cluster.yaml"] = H.read_file(FIX), ["claim.yaml"] = H.read_file(CLAIM) })
    local p = W.start({ "allocate", "--node", NODE, "-f", man, "--policies", pol, "-o", "json", "--watch" })
    assert.truthy(p:wait_lines(1), p:stderr())
    P.write(pol, { ["numa-bridge.lua"] = BROKEN })
    assert.truthy(p:wait_lines(2), p:stderr())
    -- a manifest change while the directory still holds the bad revision
    P.write(man, { ["ns.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata: {name: extra}\n" })
    assert.truthy(p:wait_lines(3), p:stderr())
    local rc, out, err = p:stop()
    assert.are.equal(0, rc, err)
    local docs = {}
    for line in out:gmatch("[^\n]+") do docs[#docs + 1] = core.json_decode(line) end
    assert.are.equal(rev, docs[1].policyRevision)
    -- the refused revision decided nothing: the good one did, and the claim stays allocated
    assert.are.equal(rev, docs[2].policyRevision, out)
    assert.truthy(docs[2].policyRefused:find("refused", 1, true), out)
    assert.truthy(docs[2].policyRefused:find("numa-bridge.lua:" .. BAD_LINE, 1, true), out)
    assert.are.equal(0, docs[2].exitCode)
    assert.are.same({}, docs[2].changes)
    assert.are.equal(rev, docs[2].plan.items[1].metadata.annotations["draengine.dev/policy-revision"])
    assert.truthy(err:find("policy numa-bridge, hook derive", 1, true), err)
    -- the next plan, made for the changed manifests, is the good revision's too
    assert.are.equal(1, #docs[3].events)
    assert.are.equal(rev, docs[3].policyRevision, out)
    assert.truthy(docs[3].policyRefused, out)
    assert.are.equal(rev, docs[3].plan.items[1].metadata.annotations["draengine.dev/policy-revision"])
  end)

  it("run refuses it", function()
    local boom = mk({ ["boom.lua"] = P.policy("boom", { "boom.example.com" }, '    error("no table")') })
    local rc, out, err = H.run({ "run", "--nodes", "8", "--policies", boom, "--max-pods", "20" })
    assert.are.equal(2, rc, out)
    assert.truthy(err:find("--policies " .. boom .. ": policy revision", 1, true), err)
    assert.truthy(err:find("policy boom, hook derive, " .. boom .. "/boom.lua:", 1, true), err)
    assert.falsy(out:find("Pods:", 1, true), out)
  end)
end)

describe("serve and the verdict", function()
  local srv, procs
  before_each(function() srv = K.start{ seed = 7 }; procs = {} end)
  after_each(function()
    local reports = S.stop_all(procs)
    srv:stop()
    assert.are.same({}, reports)
  end)

  local FAIL_ALL = P.policy("boom", { "boom.example.com" }, '    error("no table")')

  it("stops when its first revision fails on the cluster's devices, binding nothing", function()
    local dir = mk({ ["boom.lua"] = FAIL_ALL })
    srv:load(S.cluster(2, 2))
    srv:load{ K.claim("default", "c1", "gpu", 1),
              K.pod("default", "one", { claims = { { name = "gpu", resourceClaimName = "c1" } } }) }
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", dir })
    procs[#procs + 1] = p
    assert.are.equal(2, p:wait(20))
    local log = p:stderr()
    assert.truthy(log:find("refused", 1, true), log)
    assert.truthy(log:find("no earlier revision to keep", 1, true), log)
    assert.truthy(log:find('policy="boom"', 1, true), log)
    assert.is_nil(srv:get("/api/v1/namespaces/default/pods/one").spec.nodeName)
  end)

  it("refuses it on reload and keeps the last good revision", function()
    local dir = mk({ ["ok.lua"] = P.policy("ok", { "ok.example.com" }, '    return { ["ok.example.com/v"] = 1 }') })
    srv:load(S.cluster(2, 2))
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", dir, "--policy-rescan=200ms" })
    procs[#procs + 1] = p
    local function failed()
      local _, m = p:http("/metrics")
      return tonumber(m:match('draengine_policy_reloads_total{result="failed"} (%d+)') or "0")
    end
    K.wait_for(function() return p:stderr():find("informers synced", 1, true) end, 20, 0.1)
    P.write(dir, { ["ok.lua"] = FAIL_ALL:gsub('"boom"', '"ok"'):gsub("boom%.example%.com", "ok.example.com") })
    K.wait_for(function() return failed() >= 1 end, 20, 0.1)
    assert.is_true(p:alive())
    local log = p:stderr()
    assert.truthy(log:find("policy reload refused", 1, true), log)
    assert.truthy(log:find("policy ok hook derive failed on 4 devices", 1, true), log)
    srv:load{ K.claim("default", "c1", "gpu", 1),
              K.pod("default", "one", { claims = { { name = "gpu", resourceClaimName = "c1" } } }) }
    K.wait_for(function() return srv:get("/api/v1/namespaces/default/pods/one").spec.nodeName end, 20, 0.1)
  end)
end)
