-- watch_inspect_spec.lua - `draengine inspect --watch`: the report, then per
-- change one line per object (ADDED/MODIFIED/DELETED kind ns/name (file)),
-- the summary and the blocks of the nodes the change touched; broken files
-- reported once with their last good objects kept; the ConfigMap `..data`
-- flip; -o json as JSON lines; SIGTERM/SIGINT end it with exit 0.
local H = require "support.helper"
local W = require "support.watch"
local core = require "draengine.core"

local count = W.count

describe("inspect --watch", function()
  local dir
  before_each(function()
    dir = W.tmpdir()
    W.cluster(dir)
  end)
  after_each(function() W.rmdir(dir) end)

  it("prints the report, then each change as object lines, the summary and the nodes it touched", function()
    local rc0, once = H.run({ "inspect", "-f", dir })
    assert.are.equal(0, rc0)
    local p = W.start({ "inspect", "-f", dir, "--watch" })
    assert.truthy(p:wait_for("classes\n"), p:stderr())
    assert.are.equal(once, p:stdout()) -- the first report is the one-shot report

    -- one more device on node-b: only node-b's block comes again
    W.write(dir .. "/slice-b.yaml", W.slice("node-b", 2))
    assert.truthy(p:wait_for("gpu-1"), p:stdout())
    local out = p:stdout():sub(#once + 1)
    assert.matches("^\nMODIFIED  ResourceSlice  node%-b%-gpu  %(" .. dir:gsub("%p", "%%%0") .. "/slice%-b%.yaml%)\n" ..
      "2 nodes, 2 pools, 2 slices, 3 devices, 1 classes, 0 claims %(0 allocated%), 0 taint rules\n\nnode node%-b %(Node object%)\n", out)
    assert.falsy(out:find("node node-a", 1, true), out)

    -- a new file, then a removed one
    W.write(dir .. "/more.yaml", W.node("node-c"))
    assert.truthy(p:wait_for("ADDED     Node           node-c"), p:stdout())
    os.remove(dir .. "/slice-a.yaml")
    assert.truthy(p:wait_for("DELETED   ResourceSlice  node-a-gpu"), p:stdout())
    assert.truthy(p:wait_for("3 nodes, 1 pools, 1 slices, 2 devices"), p:stdout())
    -- node-a keeps its Node object, so it is still there, without pools
    assert.truthy(p:wait_for("node node-a (Node object)\n  (no node-local pools)\n"), p:stdout())
    os.remove(dir .. "/nodes.yaml")
    assert.truthy(p:wait_for("node node-a: no longer present"), p:stdout())

    local rc, final, err = p:stop()
    assert.are.equal(0, rc)
    assert.are.equal("", err)
    assert.are.equal(1, count(final, "MODIFIED"))
  end)

  it("reports a broken file once and keeps its last good objects", function()
    local p = W.start({ "inspect", "-f", dir, "--watch" })
    assert.truthy(p:wait_for("classes\n"))
    local before = #p:stdout()
    W.write(dir .. "/slice-a.yaml", "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: [\n")
    assert.truthy(p:wait_until(function(_, err) return err:find("slice-a.yaml", 1, true) end), p:stderr())
    -- an unrelated change afterwards: node-a's device is still counted
    W.write(dir .. "/class.yaml", W.class:gsub("gpu.example.com'", "gpu.example.com' && true"))
    assert.truthy(p:wait_for("MODIFIED  DeviceClass    gpu.example.com"), p:stdout())
    assert.truthy(p:wait_for("2 nodes, 2 pools, 2 slices, 2 devices"), p:stdout())
    -- an object the graph refuses is reported, the previous version stays
    W.write(dir .. "/slice-b.yaml", W.slice("node-b", 1):gsub("generation: 1", "generation: -1"))
    assert.truthy(p:wait_until(function(_, err) return err:find("not applied; the previous version stays", 1, true) end),
      p:stderr())
    -- fixed: the slice comes back as it is now
    W.write(dir .. "/slice-a.yaml", W.slice("node-a", 3))
    assert.truthy(p:wait_for("MODIFIED  ResourceSlice  node-a-gpu"), p:stdout())
    assert.truthy(p:wait_for("2 nodes, 2 pools, 2 slices, 4 devices"), p:stdout())
    local rc, out, err = p:stop("INT")
    assert.are.equal(0, rc)
    assert.are.equal(1, count(err, "slice-a.yaml"), err) -- once, not once per scan
    assert.are.equal(1, count(err, "slice-b.yaml"), err)
    assert.truthy(#out > before)
  end)

  it("follows a ConfigMap volume update (the ..data symlink flip)", function()
    local cm = W.tmpdir()
    W.sh(string.format("cd %s && mkdir ..2024_01_01_00_00_00.1 && ln -s ..2024_01_01_00_00_00.1 ..data " ..
      "&& ln -s ..data/slices.yaml slices.yaml", H.shell_quote(cm)))
    W.write(cm .. "/..2024_01_01_00_00_00.1/slices.yaml", W.slice("node-a", 1) .. "---\n" .. W.slice("node-b", 1))
    local p = W.start({ "inspect", "-f", cm, "--watch" })
    assert.truthy(p:wait_for("2 nodes, 2 pools, 2 slices, 2 devices"), p:stderr())
    W.sh(string.format("cd %s && mkdir ..2024_01_01_00_01_00.2", H.shell_quote(cm)))
    W.write(cm .. "/..2024_01_01_00_01_00.2/slices.yaml", W.slice("node-a", 4) .. "---\n" .. W.slice("node-b", 1))
    W.sh(string.format("cd %s && ln -s ..2024_01_01_00_01_00.2 ..data_tmp && mv -T ..data_tmp ..data " ..
      "&& rm -rf ..2024_01_01_00_00_00.1", H.shell_quote(cm)))
    assert.truthy(p:wait_for("2 nodes, 2 pools, 2 slices, 5 devices"), p:stdout())
    local rc, out = p:stop()
    assert.are.equal(0, rc)
    -- one object changed: the file is seen through its stable path, not the hidden directories
    assert.are.equal(1, count(out, "MODIFIED  ResourceSlice  node-a-gpu  (" .. cm .. "/slices.yaml)"), out)
    assert.are.equal(0, count(out, "node-b-gpu"), out)
    W.rmdir(cm)
  end)

  it("-o json prints one document per change (JSON lines)", function()
    local _, once = H.run({ "inspect", "-f", dir, "-o", "json" })
    local p = W.start({ "inspect", "-f", dir, "--watch", "-o", "json" })
    assert.truthy(p:wait_lines(1))
    W.write(dir .. "/slice-b.yaml", W.slice("node-b", 2))
    assert.truthy(p:wait_lines(2))
    local rc, out = p:stop()
    assert.are.equal(0, rc)
    local docs = {}
    for line in out:gmatch("[^\n]+") do docs[#docs + 1] = core.json_decode(line) end
    assert.are.equal(2, #docs)
    assert.are.equal(1, docs[1].cycle)
    assert.are.same(core.json_decode(once), docs[1].report)
    assert.are.equal(5, #docs[1].events) -- every object, ADDED
    assert.are.equal("ADDED", docs[1].events[1].type)
    assert.are.same({ { type = "MODIFIED", kind = "ResourceSlice", namespace = "", name = "node-b-gpu",
                        file = dir .. "/slice-b.yaml" } }, docs[2].events)
    assert.are.equal(3, docs[2].report.summary.devices)
  end)

  it("refuses what it cannot watch", function()
    local rc, _, err = H.run({ "inspect", "-f", "-", "--watch" }, "")
    assert.are.equal(2, rc)
    assert.matches("cannot watch stdin", err, 1, true)
    rc, _, err = H.run({ "inspect", "-f", dir .. "/nope", "--watch" })
    assert.are.equal(2, rc)
    assert.matches("nope", err, 1, true)
  end)
end)
