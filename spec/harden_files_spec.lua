-- harden_files_spec.lua - hostile trees and inputs for every walk and every
-- open of a user path (engine/base/dir.c): symlink loops, directories
-- reachable twice, FIFOs, sockets and dangling links with manifest or policy
-- names, endless and binary streams.  Nothing may hang, nothing may be read
-- twice, every skip is reported.
local H = require "support.helper"
local core = require "draengine.core"

local q = H.shell_quote
local MULTI = H.root .. "/spec/fixtures/base/multi.yaml"

-- run the binary with a hard time limit (a hang fails the spec instead of
-- the run); timeout itself runs without the ASan preload
local function run(args, seconds, stdin_cmd)
  local parts = {}
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local out, err = os.tmpname(), os.tmpname()
  local cmd = string.format("env -u LD_PRELOAD timeout -s KILL %d %s %s >%s 2>%s", seconds or 20, q(H.bin),
    table.concat(parts, " "), out, err)
  if stdin_cmd then cmd = stdin_cmd .. " | " .. cmd end
  local t0 = os.time()
  local ok, how, code = os.execute("bash -c " .. q(cmd))
  local took = os.time() - t0
  local rc = ok == true and 0 or ((how == "exit") and code or 128 + (code or 0))
  local o, e = H.read_file(out), H.read_file(err)
  os.remove(out); os.remove(err)
  assert.is_true(rc ~= 137, "killed by the time limit: " .. table.concat(args, " ") .. "\n" .. e)
  return rc, o, e, took
end

local function sh(script) H.sh("bash -c " .. q("set -e\n" .. script)) end

-- a socket file named `path` (bound by python, which exits at once)
local function socket_at(path)
  H.sh("env -u LD_PRELOAD python3 -c " .. q("import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])")
    .. " " .. q(path))
end

describe("directory walks", function()
  local d

  before_each(function()
    d = H.tmpdir()
    sh(string.format([[
cd %s
cp %s real.yaml
ln -s . loop1
ln -s . loop2
mkdir -p sub/deeper
ln -s ../.. sub/deeper/up
ln -s .. sub/deeper/side
mkfifo fifo.yaml
ln -s nowhere dangling.yaml
ln -s selfloop.yaml selfloop.yaml
]], q(d), q(MULTI)))
    socket_at(d .. "/sock.json")
  end)

  after_each(function() H.rmdir(d) end)

  it("ends on symlink loops, reads every real file once and reports each skip", function()
    local rc, out, err = run({ "inspect", "-f", d, "-o", "json" })
    assert.are.equal(0, rc, err)
    local j = core.json_decode(out)
    assert.are.equal(1, j.summary.slices)
    assert.are.equal(1, j.summary.classes)
    for _, want in ipairs({
      d .. "/loop1: symlink to a directory already walked as " .. d,
      d .. "/loop2: symlink to a directory already walked as " .. d,
      d .. "/sub/deeper/up: symlink to a directory already walked as " .. d,
      d .. "/sub/deeper/side: symlink to a directory already walked as " .. d .. "/sub",
      d .. "/fifo.yaml: not a regular file (a FIFO)",
      d .. "/sock.json: not a regular file (a socket)",
      d .. "/dangling.yaml: dangling symlink",
      d .. "/selfloop.yaml: symlink loop",
    }) do
      assert.truthy(err:find(want, 1, true), "missing: " .. want .. "\n" .. err)
    end
  end)

  it("allocate and the file watcher walk the same way", function()
    local rc, _, err = run({ "allocate", "-f", d, "-o", "json" })
    assert.are.equal(0, rc, err)
    assert.truthy(err:find("fifo.yaml: not a regular file", 1, true), err)
    local w = core.watch({ d }, { watch = false })
    local evs = w:scan()
    local adds = 0
    for _, ev in ipairs(evs) do
      assert.are_not.equal("error", ev.op, ev.message)
      if ev.op == "add" then adds = adds + 1 end
    end
    assert.are.equal(2, adds)
    local objs, files = w:count()
    assert.are.equal(2, objs)
    assert.are.equal(1, files)
    w:close()
  end)

  it("a directory reachable by two paths is read once, under the first path", function()
    local e = H.tmpdir()
    sh(string.format("cd %s && mkdir b && cp %s b/x.yaml && ln -s b a", q(e), q(MULTI)))
    local rc, out, err = run({ "inspect", "-f", e, "-o", "json" })
    assert.are.equal(0, rc, err) -- no duplicate-object error
    assert.are.equal(1, core.json_decode(out).summary.slices)
    assert.truthy(err:find(e .. "/b: is a directory already walked as " .. e .. "/a", 1, true), err)
    H.rmdir(e)
  end)
end)

describe("inputs that never end or are not text", function()
  it("-f /dev/zero stops at the first read", function()
    local rc, _, err, took = run({ "inspect", "-f", "/dev/zero" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("/dev/zero: a NUL byte at offset 0: binary data, not text", 1, true), err)
    assert.is_true(took <= 2)
    rc, _, err = run({ "allocate", "-f", "/dev/urandom" })
    assert.are.equal(2, rc)
    assert.truthy(err:find("binary data", 1, true), err)
    rc, _, err = run({ "allocate", "-f", "-" }, 20, "head -c 100000000 /dev/zero")
    assert.are.equal(2, rc)
    assert.truthy(err:find("<stdin>: a NUL byte at offset 0", 1, true), err)
  end)

  it("an endless text stream stops at the stream limit", function()
    if H.asan then return end -- 512 MiB through the ASan allocator is only slow, not different
    local rc, _, err, took = run({ "inspect", "-f", "-" }, 60, "yes")
    assert.are.equal(2, rc)
    assert.truthy(err:find("<stdin>: larger than the 536870912-byte limit for a stream", 1, true), err)
    assert.is_true(took < 30)
  end)

  it("a FIFO named on the command line without a writer reads as empty, never hangs", function()
    local d = H.tmpdir()
    sh("mkfifo " .. q(d .. "/f.yaml"))
    local rc, out, err = run({ "inspect", "-f", d .. "/f.yaml" })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("0 slices", 1, true), out)
    -- a pipe with content is read like a file (process substitution, kubectl | draengine)
    rc, out, err = run({ "inspect", "-f", "-" }, 20, "cat " .. q(MULTI))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("1 slices", 1, true), out)
    -- the watcher cannot watch a stream: an error event, not a hang
    local w = core.watch({ d .. "/f.yaml" }, { watch = false })
    local evs = w:scan()
    assert.are.equal("error", evs[1].op)
    assert.truthy(evs[1].message:find("not a regular file (a FIFO)", 1, true), evs[1].message)
    w:close()
    H.rmdir(d)
  end)
end)

describe("policy directories", function()
  local d

  local PACK = [[return { name = "p", version = "1.0.0", domains = { "a.example.com", "b.example.com" },
  policies = { "a.lua", "b.lua" } }]]
  local POLICY = [[return { name = "%s", version = "1.0.0", api = 1, domains = { "%s.example.com" },
  derive = function(dev) return {} end }]]

  before_each(function()
    d = H.tmpdir()
    sh("mkdir -p " .. q(d .. "/pack/spec"))
    H.write(d .. "/pack/pack.lua", PACK)
    H.write(d .. "/pack/a.lua", POLICY:format("a", "a"))
  end)

  after_each(function() H.rmdir(d) end)

  local function refused(what, kind)
    for _, args in ipairs({ { "policy", "list", d }, { "policy", "test", d },
      { "allocate", "-f", MULTI, "--policies", d } }) do
      local rc, _, err = run(args)
      assert.are.equal(2, rc, table.concat(args, " ") .. ": " .. err)
      assert.truthy(err:find(what .. ": " .. kind, 1, true), err)
    end
  end

  it("a FIFO in a pack's policies list is refused, not read", function()
    sh("mkfifo " .. q(d .. "/pack/b.lua"))
    refused(d .. "/pack/b.lua", "not a regular file (a FIFO)")
    local rc, out = run({ "policy", "lint", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find("b.lua: error: not a regular file (a FIFO)", 1, true), out)
  end)

  it("a dangling link or a socket named like a policy or a pack manifest is refused", function()
    sh("ln -s gone " .. q(d .. "/pack/b.lua"))
    refused(d .. "/pack/b.lua", "dangling symlink")
    sh("rm " .. q(d .. "/pack/b.lua"))
    socket_at(d .. "/top.lua")
    H.write(d .. "/pack/b.lua", POLICY:format("b", "b"))
    refused(d .. "/top.lua", "not a regular file (a socket)")
    sh("rm " .. q(d .. "/top.lua") .. " && mkdir " .. q(d .. "/other") .. " && mkfifo " .. q(d .. "/other/pack.lua"))
    refused(d .. "/other/pack.lua", "not a regular file (a FIFO)")
  end)

  it("a dangling link found in the directory reads as absent, with a warning (a ConfigMap key being removed)", function()
    H.write(d .. "/pack/b.lua", POLICY:format("b", "b"))
    sh("cd " .. q(d) .. " && ln -s ..data/gone.lua gone.lua && mkdir other && ln -s ../nowhere other/pack.lua")
    local rc, out, err = run({ "policy", "list", d })
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("a.lua", 1, true) and out:find("b.lua", 1, true), out)
    assert.truthy(err:find(d .. "/gone.lua: dangling symlink (its target does not exist), skipped", 1, true), err)
    assert.truthy(err:find(d .. "/other/pack.lua: dangling symlink", 1, true), err)
  end)

  it("a FIFO spec file fails its test run instead of hanging it", function()
    H.write(d .. "/pack/b.lua", POLICY:format("b", "b"))
    sh("mkfifo " .. q(d .. "/pack/spec/x_spec.lua"))
    local rc, out, err = run({ "policy", "test", d })
    assert.are.equal(1, rc, err)
    assert.truthy((out .. err):find("x_spec.lua: not a regular file (a FIFO)", 1, true), out .. err)
  end)

  it("lint ends on symlink loops and reports them", function()
    H.write(d .. "/pack/b.lua", POLICY:format("b", "b"))
    sh("cd " .. q(d .. "/pack") .. " && ln -s . l1 && ln -s . l2 && ln -s .. spec/up")
    local rc, out = run({ "policy", "lint", d })
    assert.are.equal(1, rc)
    assert.truthy(out:find("l1: error: symlink to a directory already walked as " .. d .. "/pack", 1, true), out)
    assert.truthy(out:find("up: error: symlink to a directory already walked as " .. d, 1, true), out)
  end)
end)

describe("outputs", function()
  it("run --report to a FIFO nobody reads fails instead of blocking", function()
    local d = H.tmpdir()
    sh("mkfifo " .. q(d .. "/report.html"))
    local rc, _, err = run({ "run", "--nodes", "2", "--max-pods", "5", "--no-policies", "--report", d .. "/report.html" })
    assert.are_not.equal(0, rc)
    assert.truthy(err:find("report.html: a FIFO with no reader", 1, true), err)
    H.rmdir(d)
  end)
end)

describe("sysfs --root", function()
  it("a FIFO or a dangling link in place of an attribute is refused, not read", function()
    local root = H.tmpdir()
    local dev = root .. "/devices/pci0000:00/0000:00:01.0"
    sh(string.format([[
mkdir -p %s %s
ln -s ../../../devices/pci0000:00/0000:00:01.0 %s/0000:00:01.0
mkfifo %s/vendor
echo 0x0001 > %s/device
echo 0x030200 > %s/class
]], q(dev), q(root .. "/bus/pci/devices"), q(root .. "/bus/pci/devices"), q(dev), q(dev), q(dev)))
    local rc, _, err = run({ "sysfs", "--driver", "x.example.com", "--root", root })
    assert.are.equal(2, rc, err)
    assert.truthy(err:find("vendor: not a regular file (a FIFO)", 1, true), err)
    sh("rm " .. q(dev .. "/vendor") .. " && ln -s gone " .. q(dev .. "/vendor"))
    rc, _, err = run({ "sysfs", "--driver", "x.example.com", "--root", root })
    assert.are.equal(2, rc, err)
    assert.truthy(err:find("vendor: dangling symlink", 1, true), err)
    H.rmdir(root)
  end)
end)
