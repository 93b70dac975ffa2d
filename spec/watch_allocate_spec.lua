-- watch_allocate_spec.lua - `draengine allocate --watch`: the plan, then a
-- fresh plan per change of the manifests or of --policies DIR, printed as
-- the decisions that changed (table) or as one JSON document per plan (JSON
-- lines); failed plans keep the last good one; SIGTERM ends it with 0.
local H = require "support.helper"
local W = require "support.watch"
local core = require "draengine.core"

local function lines_after(out, prefix)
  return out:sub(#prefix + 1)
end

local function json_lines(out)
  local docs = {}
  for line in out:gmatch("[^\n]+") do docs[#docs + 1] = core.json_decode(line) end
  return docs
end

describe("allocate --watch", function()
  local dir
  before_each(function()
    dir = W.tmpdir()
    W.cluster(dir)
    W.write(dir .. "/p1.yaml", W.pod("p1"))
    W.write(dir .. "/p2.yaml", W.pod("p2"))
  end)
  after_each(function() W.rmdir(dir) end)

  it("prints the plan, then the decisions each change moves", function()
    local rc0, once, err0 = H.run({ "allocate", "-f", dir, "-o", "table" })
    assert.are.equal(0, rc0, err0)
    local p = W.start({ "allocate", "-f", dir, "-o", "table", "--watch" })
    assert.truthy(p:wait_for("2 pod(s) scheduled"), p:stderr())
    assert.are.equal(once, p:stdout()) -- the first plan is the one-shot plan, byte for byte

    -- p0 sorts first and takes node-a: p1 moves to node-b, p2 has no GPU left
    W.write(dir .. "/p0.yaml", W.pod("p0"))
    assert.truthy(p:wait_for("plan 2:"), p:stdout())
    assert.truthy(p:wait_for("  2 pod(s) scheduled, 1 unschedulable\n"), p:stdout())
    assert.are.equal("\n" ..
      "ADDED     ResourceClaim  default/p0-gpu  (" .. dir .. "/p0.yaml)\n" ..
      "ADDED     Pod            default/p0  (" .. dir .. "/p0.yaml)\n" ..
      "plan 2: 4 changes\n" ..
      "  pod default/p0: scheduled on node-a\n" ..
      "  pod default/p1: moved node-a -> node-b\n" ..
      "  claim default/p1-gpu: gpu=gpu.example.com/node-a/gpu-0 -> gpu=gpu.example.com/node-b/gpu-0\n" ..
      "  pod default/p2: unschedulable (was on node-b): 0/2 nodes are available: 2 x no free device of class gpu.example.com\n" ..
      "  2 pod(s) scheduled, 1 unschedulable\n", lines_after(p:stdout(), once))
    local mark = p:stdout()

    -- a second GPU on node-b: p2 becomes schedulable again
    W.write(dir .. "/slice-b.yaml", W.slice("node-b", 2))
    assert.truthy(p:wait_for("plan 3:"), p:stdout())
    assert.truthy(p:wait_for("3 pod(s) scheduled, 0 unschedulable"), p:stdout())
    local step = lines_after(p:stdout(), mark)
    assert.truthy(step:find("  pod default/p2: scheduled on node-b (was unschedulable)\n", 1, true), step)
    mark = p:stdout()

    -- a change that moves nothing says so
    W.write(dir .. "/slice-a.yaml", W.slice("node-a", 1, "B"))
    assert.truthy(p:wait_for("plan 4: no change (3 pod(s) scheduled, 0 unschedulable)"), p:stdout())

    -- a removed pod, and an invalid file that leaves the last good plan in force
    os.remove(dir .. "/p0.yaml")
    assert.truthy(p:wait_for("  pod default/p0: removed from the input (was on node-a)"), p:stdout())
    W.write(dir .. "/p9.yaml", W.pod("p9"):gsub("deviceClassName: gpu.example.com", "deviceClassName: nope"))
    assert.truthy(p:wait_for("plan 6: not updated: "), p:stdout())
    os.remove(dir .. "/p9.yaml")
    assert.truthy(p:wait_for("plan 7: no change"), p:stdout())

    local rc, _, err = p:stop()
    assert.are.equal(0, rc)
    assert.truthy(err:find("nope", 1, true), err)
  end)

  it("-o json prints one document per plan: events, changes, unschedulable pods, the List", function()
    local _, once = H.run({ "allocate", "-f", dir, "-o", "json" })
    local p = W.start({ "allocate", "-f", dir, "-o", "json", "--watch" })
    assert.truthy(p:wait_lines(1), p:stderr())
    W.write(dir .. "/p0.yaml", W.pod("p0"))
    assert.truthy(p:wait_lines(2), p:stderr())
    local _, now = H.run({ "allocate", "-f", dir, "-o", "json" }) -- the files as they are now
    W.write(dir .. "/broken.yaml", "kind: [")
    assert.truthy(p:wait_lines(3), p:stderr())
    local rc, out, err = p:stop()
    assert.are.equal(0, rc, err)
    local docs = json_lines(out)
    assert.are.equal(3, #docs)
    assert.are.same(core.json_decode(once), docs[1].plan)
    assert.are.equal(0, docs[1].exitCode)
    assert.is_nil(docs[1].policyRevision)
    assert.are.same({ { pod = "default/p1", change = "scheduled", node = "node-a" },
                      { pod = "default/p2", change = "scheduled", node = "node-b" } }, docs[1].changes)
    local second = docs[2]
    assert.are.equal(2, second.cycle)
    assert.are.equal(1, second.exitCode)
    assert.are.same({ "ADDED", "ADDED" }, { second.events[1].type, second.events[2].type })
    assert.are.same({ pod = "default/p1", change = "moved", from = "node-a", to = "node-b" }, second.changes[2])
    assert.are.same({ { pod = "default/p2",
                        reason = "0/2 nodes are available: 2 x no free device of class gpu.example.com" } },
      second.unschedulable)
    -- the List of this plan is what the one-shot run prints for the same files
    assert.are.same(core.json_decode(now), second.plan)
    -- a broken file: reported in the document, the plan unchanged
    assert.are.equal(1, #docs[3].errors)
    assert.truthy(docs[3].errors[1]:find("broken.yaml", 1, true))
    assert.are.same({}, docs[3].changes)
    assert.are.same(second.plan, docs[3].plan)
  end)

  it("re-plans when the policies change, through a ConfigMap ..data flip, and names the revision", function()
    -- the shipped numa-bridge policy, mounted the way the kubelet mounts a ConfigMap
    local pol = W.tmpdir()
    local src = H.read_file(H.root .. "/policies/numa-bridge.lua")
    W.sh(string.format("cd %s && mkdir ..v1 && ln -s ..v1 ..data && ln -s ..data/numa-bridge.lua numa-bridge.lua",
      H.shell_quote(pol)))
    W.write(pol .. "/..v1/numa-bridge.lua", src)
    local _, list = H.run({ "policy", "list", pol })
    local rev1 = list:match("revision (%x+)")
    local fix = H.root .. "/policies/spec/fixtures/oci-gb200.yaml"
    local claim = H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml"
    local args = { "allocate", "--node", "10.140.65.248", "-f", fix, "-f", claim, "--policies", pol, "-o", "json",
                   "--watch" }
    local p = W.start(args)
    assert.truthy(p:wait_lines(1), p:stderr())
    -- the next revision drops the bridge: the GPU and the NIC no longer share a NUMA node
    W.sh(string.format("cd %s && mkdir ..v2 && ln -s ..v2 ..data_tmp && mv -T ..data_tmp ..data && rm -rf ..v1",
      H.shell_quote(pol)))
    assert.truthy(p:wait_lines(2), p:stderr())
    -- and back
    W.sh("mkdir " .. H.shell_quote(pol .. "/..v3"))
    W.write(pol .. "/..v3/numa-bridge.lua", src)
    W.sh(string.format("cd %s && ln -s ..v3 ..data_tmp && mv -T ..data_tmp ..data && rm -rf ..v2", H.shell_quote(pol)))
    assert.truthy(p:wait_lines(3), p:stderr())
    local rc, out, err = p:stop()
    assert.are.equal(0, rc, err)
    local docs = json_lines(out)
    assert.are.equal(3, #docs)
    assert.are.equal(rev1, docs[1].policyRevision)
    assert.are.equal(0, docs[1].exitCode)
    assert.are.equal(rev1, docs[1].plan.items[1].metadata.annotations["draengine.dev/policy-revision"])
    assert.are.same({}, docs[2].events) -- the policies alone changed
    assert.are.equal(1, docs[2].exitCode)
    assert.are_not.equal(rev1, docs[2].policyRevision)
    assert.are.equal("unschedulable", docs[2].changes[1].change)
    assert.truthy(docs[2].changes[1].reason:find("resource.kubernetes.io/numaNode", 1, true))
    assert.are.equal(rev1, docs[3].policyRevision)
    assert.are.equal("schedulable", docs[3].changes[1].change)
    W.rmdir(pol)
  end)

  it("keeps the last good revision while the policies do not load, and says so", function()
    local pol = W.tmpdir()
    W.write(pol .. "/numa-bridge.lua", H.read_file(H.root .. "/policies/numa-bridge.lua"))
    local p = W.start({ "allocate", "-f", dir, "--policies", pol, "-o", "table", "--watch" })
    assert.truthy(p:wait_for("2 pod(s) scheduled"), p:stderr())
    assert.matches("^policy revision %x+ %(1 policy in ", p:stdout())
    W.write(pol .. "/broken.lua", "return {")
    assert.truthy(p:wait_for("plan 2: policy revision refused, "), p:stdout())
    assert.truthy(p:stdout():find("stays (--policies " .. pol .. ": " .. pol .. "/broken.lua:1:", 1, true), p:stdout())
    assert.truthy(p:wait_for("no change (2 pod(s) scheduled"), p:stdout())
    os.remove(pol .. "/broken.lua")
    assert.truthy(p:wait_for("plan 3: no change"), p:stdout())
    local rc, out = p:stop()
    assert.are.equal(0, rc)
    assert.truthy(out:find("policies changed in " .. pol, 1, true), out)
    W.rmdir(pol)
  end)

  it("refuses stdin", function()
    local rc, _, err = H.run({ "allocate", "-f", "-", "--watch" }, "")
    assert.are.equal(2, rc)
    assert.matches("cannot watch stdin", err, 1, true)
  end)
end)
