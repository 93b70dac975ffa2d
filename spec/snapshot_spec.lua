-- snapshot_spec.lua - `draengine snapshot`: a live cluster's DRA objects in
-- one file, read with serve's client, that `policy diff`, `allocate` and
-- `inspect` take as input.  Against the test API server (spec/support).
local H = require "support.helper"
local K = require "support.kubeapi"
local S = require "support.serve"
local core = require "draengine.core"

local function docs_of(path)
  local out = {}
  local text = H.read_file(path)
  for doc in (text .. "\n---\n"):gmatch("(.-)\n%-%-%-\n") do
    if doc:find("%S") then out[#out + 1] = doc end
  end
  return out, text
end

describe("draengine snapshot", function()
  local srv, dir
  before_each(function()
    srv = K.start{ seed = 11 }
    dir = H.tmpdir()
  end)
  after_each(function()
    srv:stop()
    H.rmdir(dir)
  end)

  local function cluster()
    srv:load(S.cluster(3, 4))
    local rule = { apiVersion = "resource.k8s.io/v1", kind = "DeviceTaintRule", metadata = { name = "maint" },
      spec = { deviceSelector = { driver = "gpu.example.com", pool = "node-003" },
               taint = { key = "maintenance", effect = "NoSchedule" } } }
    srv:load{ rule, K.claim("default", "c1", "gpu", 2), K.claim("default", "c2", "gpu", 1),
      K.pod("default", "p1", { claims = { { name = "gpu", resourceClaimName = "c1" } } }),
      K.pod("default", "p2", { claims = { { name = "gpu", resourceClaimName = "c2" } } }) }
  end

  it("writes every kind a decision needs, sorted, without managedFields", function()
    cluster()
    -- an object the way a real server returns it
    local n = K.node("node-extra")
    n.metadata.managedFields = { { manager = "kubelet", operation = "Update" } }
    srv:load{ n }
    local file = dir .. "/snap.yaml"
    local rc, out, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file })
    assert.are.equal(0, rc, err)
    assert.are.equal("", out)
    assert.truthy(err:find("objects from https://127.0.0.1:" .. srv.port .. " written to " .. file, 1, true), err)
    local docs, text = docs_of(file)
    assert.falsy(text:find("managedFields", 1, true))
    local kinds, order = {}, {}
    for _, d in ipairs(docs) do
      local k = d:match("\nkind: (%a+)") or d:match("^kind: (%a+)")
      if k and not kinds[k] then kinds[k] = 0; order[#order + 1] = k end
      kinds[k] = kinds[k] + 1
    end
    assert.are.same({ "Namespace", "Node", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
                      "ResourceClaimTemplate", "ResourceClaim", "Pod" }, order)
    assert.are.equal(4, kinds.Node)
    assert.are.equal(3, kinds.ResourceSlice)
    assert.are.equal(2, kinds.ResourceClaim)
    -- the same cluster gives the same bytes
    local file2 = dir .. "/snap2.yaml"
    assert.are.equal(0, (H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file2 })))
    assert.are.equal(text, H.read_file(file2))
  end)

  it("is what allocate, inspect and policy diff take as input", function()
    cluster()
    local file = dir .. "/snap.yaml"
    assert.are.equal(0, (H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file })))
    local rc, out, err = H.run({ "allocate", "-f", file, "-o", "table" })
    assert.are.equal(0, rc, err .. out)
    assert.truthy(out:find("2 pod(s) scheduled, 0 unschedulable", 1, true), out)
    -- the DeviceTaintRule came along: node-003's GPUs are tainted
    rc, out, err = H.run({ "inspect", "-f", file })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("maintenance:NoSchedule", 1, true), out)
    local empty = H.tmpdir()
    rc, out, err = H.run({ "policy", "diff", "--from", empty, "--to", H.root .. "/policies", "-f", file })
    H.rmdir(empty)
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("allocations: 2 pending claims replayed", 1, true), out)
  end)

  it("writes one JSON List for a .json file, and to stdout by default", function()
    cluster()
    local file = dir .. "/snap.json"
    assert.are.equal(0, (H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file })))
    local doc = core.json_decode(H.read_file(file))
    assert.are.equal("List", doc.kind)
    assert.are.equal("Namespace", doc.items[1].kind)
    local rc, out = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "--format", "json" })
    assert.are.equal(0, rc)
    assert.are.same(doc, core.json_decode(out))
  end)

  it("reads lists of more than one page", function()
    local objs = { K.class("gpu", "gpu.example.com") }
    for i = 1, 520 do objs[#objs + 1] = K.pod("default", string.format("p%04d", i)) end
    srv:load(objs)
    local rc, out, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "--format", "json" })
    assert.are.equal(0, rc, err)
    local n = 0
    for _, o in ipairs(core.json_decode(out).items) do if o.kind == "Pod" then n = n + 1 end end
    assert.are.equal(520, n)
    -- the probe, then two pages of 500 (the informer's page size, as serve's)
    assert.is_true(srv:stats().by_res.pods.list >= 3, "expected a continued list")
  end)

  it("leaves out a kind the cluster does not serve, with a note", function()
    cluster()
    srv:faults{ rules = { { method = "GET", path = "podgroups", status = 404, reason = "NotFound",
                            message = "the server could not find the requested resource", count = 1000 } } }
    local file = dir .. "/snap.yaml"
    local rc, _, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file })
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("does not serve podgroups", 1, true), err)
    assert.truthy(H.read_file(file):find("kind: ResourceClaim\n", 1, true))
  end)

  it("refuses to write a snapshot without a kind it may not list", function()
    cluster()
    srv:faults{ rules = { { method = "GET", path = "/resourceclaims(\\?|$)", status = 403, reason = "Forbidden",
                            message = 'resourceclaims.resource.k8s.io is forbidden: User "x" cannot list',
                            count = 1000 } } }
    local file = dir .. "/snap.yaml"
    local rc, out, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "-o", file })
    assert.are.equal(2, rc, out)
    assert.truthy(err:find("may not list resourceclaims", 1, true), err)
    assert.is_nil(io.open(file, "r"), "no partial snapshot")
  end)

  it("names a broken connection and refuses unknown flags", function()
    local rc, _, err = H.run({ "snapshot", "--kubeconfig", "/nonexistent/kubeconfig" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("/nonexistent/kubeconfig", 1, true), err)
    rc, _, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "--bogus" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('unknown flag "--bogus"', 1, true), err)
    rc, _, err = H.run({ "snapshot", "--kubeconfig", srv.kubeconfig, "--format", "xml" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("--format", 1, true), err)
    local out
    rc, out = H.run({ "snapshot", "--help" })
    assert.are.equal(0, rc)
    assert.truthy(out:find("usage: draengine snapshot", 1, true))
  end)
end)
