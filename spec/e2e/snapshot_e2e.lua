-- snapshot_e2e.lua - `draengine snapshot` against the real Kubernetes 1.37
-- API server, with the ServiceAccount of examples/deploy (serve's rights),
-- and the file fed to `policy diff`, `allocate` and `inspect`; the kubectl
-- recipe in the README makes a file that gives the same answers.
local E = require "e2e.support.e2e"
local K = require "support.kubeapi"
local H = require "support.helper"
local core = require "draengine.core"

local NS = "e2e-snapshot"
local DRIVER = "gpu.snap.example.com"

local TIER = [[
return {
  name = "snap-tier", version = "1.0.0", api = 1, domains = { "tier.snap.example.com" },
  derive = function(device)
    local i = device.attributes.index
    if i == nil then return nil end
    return { ["tier.snap.example.com/tier"] = (i < 2) and "gold" or "silver" }
  end,
}
]]

-- Decisions of `allocate -o json`: pod -> node, claim -> devices.
local function decisions(file, policies)
  local args = { "allocate", "-f", file, "-o", "json" }
  if policies then args[#args + 1] = "--policies"; args[#args + 1] = policies end
  local rc, out, err = H.run(args)
  assert(rc == 0 or rc == 1, err)
  local d = {}
  for _, o in ipairs(core.json_decode(out).items) do
    if o.metadata.namespace == NS then
      local key = o.kind .. " " .. o.metadata.name
      if o.kind == "Pod" then
        d[key] = o.spec.nodeName or "unschedulable"
      elseif o.kind == "ResourceClaim" then
        d[key] = table.concat(E.devices(o), ",")
      end
    end
  end
  return d
end

describe("draengine snapshot on a real control plane", function()
  local mark, dir
  before_each(function()
    mark = E.audit_mark()
    E.namespace(NS)
    E.node("snap-n1")
    E.node("snap-n2")
    E.create(K.slice("snap-n1", DRIVER, 4))
    E.create(K.slice("snap-n2", DRIVER, 4))
    E.create(K.class("snap-gpu", DRIVER))
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "DeviceClass", metadata = { name = "snap-gold" },
      spec = { selectors = {
        { cel = { expression = 'device.driver == "' .. DRIVER .. '"' } },
        { cel = { expression = '"tier.snap.example.com" in device.attributes && ' ..
                               'device.attributes["tier.snap.example.com"].tier == "gold"' } } } } })
    E.create({ apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "snap-maint" },
      spec = { deviceSelector = { driver = DRIVER, pool = "snap-n2" },
               taint = { key = "maintenance", value = "planned", effect = "NoSchedule" } } })
    E.create(K.template(NS, "one-gpu", "snap-gpu", 1))
    E.create(K.claim(NS, "gold-pair", "snap-gold", 2))
    E.create(K.claim(NS, "any", "snap-gpu", 1))
    -- no scheduler runs for them: they stay pending, as a snapshot finds pods a
    -- scheduler has not got to yet
    E.create(K.pod(NS, "trainer", { scheduler = "nobody", claims = { { name = "gpu", resourceClaimName = "gold-pair" } } }))
    E.create(K.pod(NS, "worker", { scheduler = "nobody", claims = { { name = "gpu", resourceClaimName = "any" } } }))
    dir = H.tmpdir()
    H.write(dir .. "/snap-tier.lua", TIER)
    H.sh("mkdir -p " .. H.shell_quote(dir .. "/empty"))
  end)
  after_each(function()
    E.reset()
    H.rmdir(dir)
  end)

  it("reads every kind with serve's ServiceAccount and feeds diff, allocate and inspect", function()
    local file = dir .. "/snapshot.yaml"
    local rc, out, err = H.run({ "snapshot", "--kubeconfig", E.serve_kubeconfig, "-o", file })
    assert.are.equal(0, rc, err)
    assert.are.equal("", out)
    local text = H.read_file(file)
    -- the real server sends managedFields; the snapshot leaves them out
    assert.falsy(text:find("managedFields", 1, true))
    for _, want in ipairs({ "kind: Namespace", "kind: Node", "kind: DeviceClass", "kind: ResourceSlice",
                            "kind: DeviceTaintRule", "kind: ResourceClaimTemplate", "kind: ResourceClaim", "kind: Pod" }) do
      assert.truthy(text:find("\n" .. want .. "\n", 1, true), want)
    end
    assert.truthy(text:find("name: snap-maint", 1, true))
    assert.truthy(text:find("name: gold-pair", 1, true))

    -- policy diff: the tier policy makes the gold claim schedulable
    local empty = dir .. "/empty"
    rc, out, err = H.run({ "policy", "diff", "--from", empty, "--to", dir, "-f", file, "-o", "json" })
    assert.are.equal(0, rc, err)
    local diff = core.json_decode(out)
    assert.are.equal(8, diff.summary.devicesChanged)
    local changes = {}
    for _, c in ipairs(diff.claims) do
      if c.namespace == NS then changes[c.claim] = c end
    end
    assert.are.equal("schedulable", changes["gold-pair"].change, out)
    -- the taint rule came along: gold devices of snap-n2 are tainted, so snap-n1's are taken
    assert.are.equal("snap-n1", changes["gold-pair"].to.node, out)

    -- allocate: both pods placed with the policies, the trainer not without them
    local with = decisions(file, dir)
    assert.are.equal("snap-n1", with["Pod trainer"])
    assert.are_not.equal("unschedulable", with["Pod worker"])
    assert.are.equal("unschedulable", decisions(file)["Pod trainer"])

    -- inspect shows the rule's taint and the derived tiers
    rc, out, err = H.run({ "inspect", "-f", file, "--policies", dir })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("maintenance=planned:NoSchedule", 1, true), out)
    assert.truthy(out:find("derived by snap-tier: tier.snap.example.com/tier=gold", 1, true), out)

    -- serve's ServiceAccount was enough: the server refused nothing
    assert.are.same({}, E.refused(mark))
  end)

  it("makes the same file the kubectl recipe makes, as far as every command can tell", function()
    local ours = dir .. "/snapshot.yaml"
    assert.are.equal(0, (H.run({ "snapshot", "--kubeconfig", E.admin_kubeconfig, "-o", ours })))
    -- the README's recipe, word for word (stdout only: a warning on stderr is not YAML)
    local theirs = dir .. "/kubectl.yaml"
    H.sh("env -u LD_PRELOAD " .. H.shell_quote(E.bin_dir .. "/kubectl") .. " --kubeconfig " ..
      H.shell_quote(E.admin_kubeconfig) .. " get namespaces,nodes,deviceclasses,resourceslices,devicetaintrules," ..
      "resourceclaimtemplates,resourceclaims,podgroups,pods --all-namespaces -o yaml > " .. H.shell_quote(theirs))
    assert.are.same(decisions(ours, dir), decisions(theirs, dir))
    local _, a = H.run({ "inspect", "-f", ours })
    local _, b = H.run({ "inspect", "-f", theirs })
    assert.are.equal(a:match("^[^\n]*"), b:match("^[^\n]*")) -- the same counts of everything
    local _, da = H.run({ "policy", "diff", "--from", dir .. "/empty", "--to", dir, "-f", ours })
    local _, db = H.run({ "policy", "diff", "--from", dir .. "/empty", "--to", dir, "-f", theirs })
    assert.are.equal(da:gsub("^[^\n]*\n", ""), db:gsub("^[^\n]*\n", ""))
  end)
end)
