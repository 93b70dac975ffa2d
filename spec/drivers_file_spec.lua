-- drivers_file_spec.lua - the manifest watcher: scans, diffs, errors, inotify
-- watching with debounce, the ConfigMap `..data` flip, and syncing a graph.
local H = require "support.helper"
local core = require "draengine.core"

local tmpdir, sh, write = H.tmpdir, H.sh, H.write

local function class(name, expr)
  return string.format([[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: %s
spec:
  selectors:
  - cel:
      expression: "%s"
]], name, expr or ("device.driver == '" .. name .. "'"))
end

local function summary(evs)
  local r = {}
  for _, e in ipairs(evs) do
    r[#r + 1] = e.op .. " " .. e.kind .. "/" .. e.name
  end
  return r
end

describe("file watcher", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() sh("rm -rf " .. H.shell_quote(dir)) end)

  it("reports every object once, in file and document order", function()
    write(dir .. "/a.yaml", class("a.example.com") .. "---\n" .. class("b.example.com"))
    write(dir .. "/b.json", '{"apiVersion":"v1","kind":"List","items":[' ..
      '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}]}')
    write(dir .. "/notes.txt", "not a manifest")
    write(dir .. "/.hidden.yaml", class("hidden.example.com"))
    sh("mkdir -p " .. dir .. "/sub")
    write(dir .. "/sub/c.yml", class("c.example.com"))
    local w = core.watch({ dir })
    local evs = w:scan()
    assert.are.same({ "add DeviceClass/a.example.com", "add DeviceClass/b.example.com",
                      "add Namespace/team-a", "add DeviceClass/c.example.com" }, summary(evs))
    assert.are.equal(2, evs[2].doc)
    assert.are.equal(dir .. "/a.yaml", evs[2].file)
    assert.are.equal("b.example.com", evs[2].object.metadata.name)
    local objs, files = w:count()
    assert.are.equal(4, objs)
    assert.are.equal(3, files)
    assert.are.same({}, w:scan())
    w:close()
  end)

  it("turns edits, new files and removed files into updates, adds and deletes", function()
    write(dir .. "/a.yaml", class("a.example.com") .. "---\n" .. class("b.example.com"))
    local w = core.watch({ dir })
    w:scan()
    -- change b only; a is rewritten byte for byte the same
    write(dir .. "/a.yaml", class("a.example.com") .. "---\n" .. class("b.example.com", "true"))
    assert.are.same({ "update DeviceClass/b.example.com" }, summary(w:scan()))
    write(dir .. "/z.yaml", class("z.example.com"))
    assert.are.same({ "add DeviceClass/z.example.com" }, summary(w:scan()))
    os.remove(dir .. "/a.yaml")
    local evs = w:scan()
    assert.are.same({ "delete DeviceClass/a.example.com", "delete DeviceClass/b.example.com" }, summary(evs))
    assert.are.equal("a.example.com", evs[1].object.metadata.name) -- the last version seen
    w:close()
  end)

  it("sees an object moved to another file unchanged as no change", function()
    write(dir .. "/a.yaml", class("a.example.com") .. "---\n" .. class("b.example.com"))
    local w = core.watch({ dir })
    w:scan()
    write(dir .. "/a.yaml", class("a.example.com"))
    write(dir .. "/b.yaml", class("b.example.com"))
    assert.are.same({}, w:scan())
    w:close()
  end)

  it("takes over files that did not change, next to files that did", function()
    -- old enough not to be "racily clean": their objects are taken over, not re-read
    write(dir .. "/a.yaml", class("a.example.com"))
    write(dir .. "/b.yaml", class("b.example.com"))
    write(dir .. "/c.yaml", class("c.example.com"))
    sh("touch -d '-1 minute' " .. dir .. "/a.yaml " .. dir .. "/b.yaml " .. dir .. "/c.yaml")
    local w = core.watch({ dir })
    w:scan()
    write(dir .. "/c.yaml", class("c.example.com", "true"))
    assert.are.same({ "update DeviceClass/c.example.com" }, summary(w:scan()))
    write(dir .. "/d.yaml", class("d.example.com"))
    assert.are.same({ "add DeviceClass/d.example.com" }, summary(w:scan()))
    assert.are.equal(4, (w:count()))
    w:close()
  end)

  it("keeps a broken file's last good objects and reports the error once", function()
    write(dir .. "/a.yaml", class("a.example.com"))
    local w = core.watch({ dir })
    w:scan()
    write(dir .. "/a.yaml", "apiVersion: v1\nkind: [unclosed\n")
    local evs = w:scan()
    assert.are.equal(1, #evs)
    assert.are.equal("error", evs[1].op)
    assert.truthy(evs[1].message:find(dir .. "/a.yaml", 1, true), evs[1].message)
    assert.are.same({}, w:scan()) -- same bytes: not reported again
    local objs = w:count()
    assert.are.equal(1, objs)
    write(dir .. "/a.yaml", class("a.example.com", "false"))
    assert.are.same({ "update DeviceClass/a.example.com" }, summary(w:scan()))
    w:close()
  end)

  it("reports an object defined in two files; the first file wins", function()
    write(dir .. "/a.yaml", class("x.example.com", "true"))
    write(dir .. "/b.yaml", class("x.example.com", "false"))
    local w = core.watch({ dir })
    local evs = w:scan()
    assert.are.same({ "error DeviceClass/x.example.com", "add DeviceClass/x.example.com" }, summary(evs))
    assert.truthy(evs[1].message:find("is also defined in " .. dir .. "/a.yaml", 1, true), evs[1].message)
    assert.are.equal("true", evs[2].object.spec.selectors[1].cel.expression)
    w:close()
  end)

  it("watches single files as well as directories", function()
    write(dir .. "/one.yaml", class("one.example.com"))
    write(dir .. "/two.yaml", class("two.example.com"))
    local w = core.watch({ dir .. "/one.yaml" })
    assert.are.same({ "add DeviceClass/one.example.com" }, summary(w:scan()))
    w:close()
  end)

  it("refuses paths that do not exist", function()
    assert.has_error(function() core.watch({ dir .. "/nope" }) end)
  end)
end)

describe("file watcher with inotify", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() sh("rm -rf " .. H.shell_quote(dir)) end)

  it("wakes up on a change, debounces a burst, and times out quietly", function()
    local w = core.watch({ dir }, { watch = true, debounce_ms = 50 })
    assert.is_true(w:watching())
    assert.are.same({}, w:poll(0)) -- the first poll is the initial scan of an empty dir
    assert.are.same({}, w:poll(20))
    -- a burst of writes in a child process while we wait
    sh("(sleep 0.1; for i in 1 2 3 4 5; do printf '%s' " ..
      H.shell_quote(class("burst.example.com")) .. " > " .. dir .. "/burst.yaml; done) &")
    local evs = w:poll(3000)
    assert.are.same({ "add DeviceClass/burst.example.com" }, summary(evs))
    sh("mkdir -p " .. dir .. "/new && sleep 0.05")
    w:poll(500)
    write(dir .. "/new/n.yaml", class("n.example.com"))
    assert.are.same({ "add DeviceClass/n.example.com" }, summary(w:poll(3000)))
    w:close()
  end)

  it("follows a ConfigMap volume update (the ..data symlink flip)", function()
    -- the layout the kubelet writes for a ConfigMap volume
    sh(string.format("cd %s && mkdir ..2024_01_01_00_00_00.1 && ln -s ..2024_01_01_00_00_00.1 ..data " ..
      "&& ln -s ..data/classes.yaml classes.yaml", H.shell_quote(dir)))
    write(dir .. "/..2024_01_01_00_00_00.1/classes.yaml", class("cm.example.com") .. "---\n" .. class("keep.example.com"))
    local w = core.watch({ dir }, { watch = true, debounce_ms = 50 })
    assert.are.same({ "add DeviceClass/cm.example.com", "add DeviceClass/keep.example.com" },
      summary(w:poll(0)))
    -- the kubelet's atomic update: new timestamped dir, new ..data, old dir removed
    sh(string.format("cd %s && mkdir ..2024_01_01_00_01_00.2", H.shell_quote(dir)))
    write(dir .. "/..2024_01_01_00_01_00.2/classes.yaml", class("cm.example.com", "true") .. "---\n" ..
      class("keep.example.com"))
    sh(string.format("cd %s && ln -s ..2024_01_01_00_01_00.2 ..data_tmp && mv -T ..data_tmp ..data " ..
      "&& rm -rf ..2024_01_01_00_00_00.1", H.shell_quote(dir)))
    assert.are.same({ "update DeviceClass/cm.example.com" }, summary(w:poll(3000)))
    local objs, files = w:count()
    assert.are.equal(2, objs)
    assert.are.equal(1, files)
    w:close()
  end)

  it("keeps a graph in sync: add, update, delete", function()
    local g = core.graph()
    local slice = [[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-a-gpu
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: %s}
]]
    local deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n"
    write(dir .. "/slice.yaml", string.format(slice, "LATEST-GPU-MODEL") .. "---\n" .. class("gpu.example.com"))
    write(dir .. "/other.yaml", deploy)
    local w = core.watch({ dir }, { watch = true, debounce_ms = 30 })
    local evs = w:sync(g, 0)
    assert.are.equal(3, #evs) -- a kind the graph does not model is accepted and ignored
    for _, e in ipairs(evs) do assert.is_true(e.applied, tostring(e.error)) end
    assert.are.equal(1, g:stats().slices)
    assert.are.equal(1, g:stats().classes)
    write(dir .. "/slice.yaml", string.format(slice, "OTHER") .. "---\n" .. class("gpu.example.com"))
    evs = w:sync(g, 3000)
    assert.are.same({ "update ResourceSlice/node-a-gpu" }, summary(evs))
    assert.is_true(evs[1].applied)
    os.remove(dir .. "/slice.yaml")
    os.remove(dir .. "/other.yaml")
    evs = w:sync(g, 3000)
    -- deletions come sorted by identity (group, kind, namespace, name)
    assert.are.same({ "delete Deployment/web", "delete DeviceClass/gpu.example.com",
                      "delete ResourceSlice/node-a-gpu" }, summary(evs))
    for _, e in ipairs(evs) do assert.is_true(e.applied, tostring(e.error)) end
    assert.are.equal(0, g:stats().slices)
    assert.are.equal(0, g:stats().classes)
    w:close()
  end)

  it("reports an object the graph refuses without losing the others", function()
    local g = core.graph()
    write(dir .. "/bad.yaml", class("good.example.com") .. "---\n" .. [[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: Bad_Name
spec: {}
]])
    local w = core.watch({ dir })
    local evs = w:sync(g, 0)
    assert.is_true(evs[1].applied)
    assert.is_nil(evs[2].applied)
    assert.truthy(tostring(evs[2].error):find("Bad_Name", 1, true))
    assert.are.equal(1, g:stats().classes)
    w:close()
  end)
end)
