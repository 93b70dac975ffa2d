-- policy_cli_spec.lua - what CI needs from the command line: `policy test
-- -o junit|tap|json` in the forms CI systems read, `--help` on every command
-- and subcommand, an unknown flag refused everywhere (never ignored), flags
-- taken the way kubectl takes them (-fFILE, -ojson, --flag=value), `-v` on
-- every command, --policies everywhere with --policy-dir as its alias, and
-- `policy lint` catching what the loader catches.
local H = require "support.helper"
local P = require "fixtures.policy.helper"
local core = require "draengine.core"

local POL = H.root .. "/policies"
local FIX = POL .. "/spec/fixtures/oci-gb200.yaml"
local CLAIM = H.root .. "/spec/fixtures/policy/gb200-numa-claim.yaml"

local dirs = {}
local function mk(files) local d = P.dir(files); dirs[#dirs + 1] = d; return d end
teardown(function() for _, d in ipairs(dirs) do P.rm(d) end end)

-- A pack with a passing, a failing and a pending test, and a message with
-- characters XML must escape.
local function suite()
  return mk({
    ["t.lua"] = P.policy("t", { "t.example.com" }, '    return { ["t.example.com/v"] = 1 }'),
    ["spec/t_spec.lua"] = [[
describe("t", function()
  local p = dra.test.policy("t.lua")
  it("derives v", function()
    assert.are.same({ ["t.example.com/v"] = 1 }, p:derive(dra.test.device { driver = "x.example.com" }))
  end)
  it("compares <a> & \"b\"", function() assert.are.equal("<a> & \"b\"", "c") end)
  pending("later")
end)]],
  })
end

-- Is the text well-formed XML?  (python3's parser; the specs already need python3)
local function xml_ok(text)
  local f = os.tmpname()
  H.write(f, text)
  local ok = os.execute("env -u LD_PRELOAD python3 -c 'import sys, xml.dom.minidom; " ..
    "xml.dom.minidom.parse(sys.argv[1])' " .. H.shell_quote(f) .. " 2>/dev/null")
  os.remove(f)
  return ok == true or ok == 0
end

describe("policy test output for CI", function()
  it("writes JUnit XML: a testsuite per spec file, failures with file, line and message", function()
    local d = suite()
    local rc, out, err = H.run({ "policy", "test", d, "-o", "junit" })
    assert.are.equal(1, rc, err)
    assert.truthy(xml_ok(out), out)
    assert.truthy(out:find('<testsuites name="draengine policy test ' .. d .. '" tests="3" failures="1" ' ..
      'errors="0" skipped="1">', 1, true), out)
    local file = d .. "/spec/t_spec.lua"
    assert.truthy(out:find('<testsuite name="' .. file .. '" tests="3" failures="1" errors="0" skipped="1">', 1, true), out)
    assert.truthy(out:find('<testcase classname="' .. file .. '" name="t derives v" file="' .. file .. '" line="3"/>', 1, true), out)
    assert.truthy(out:find('name="t compares &lt;a&gt; &amp; &quot;b&quot;"', 1, true), out)
    assert.truthy(out:find('<failure message="', 1, true), out)
    assert.truthy(out:find('<skipped message="pending"/>', 1, true), out)
    -- deterministic: no clock in it
    local _, again = H.run({ "policy", "test", d, "-o", "junit" })
    assert.are.equal(out, again)
  end)

  it("writes TAP 13 with the plan first and a YAML block per failure", function()
    local d = suite()
    local rc, out = H.run({ "policy", "test", d, "-otap" })
    assert.are.equal(1, rc)
    assert.truthy(out:find("^TAP version 13\n1%.%.3\n"), out)
    assert.truthy(out:find("\nok 1 - t derives v\n", 1, true), out)
    assert.truthy(out:find("\nnot ok 2 - t compares <a> & \"b\"\n  ---\n    message: |-\n", 1, true), out)
    assert.truthy(out:find('    at: "' .. d .. '/spec/t_spec.lua:', 1, true), out)
    assert.truthy(out:find("\nok 3 - t later # SKIP pending\n", 1, true), out)
  end)

  it("writes JSON, and a policy set that does not load is one error entry in every format", function()
    local d = suite()
    local rc, out = H.run({ "policy", "test", d, "--output=json" })
    assert.are.equal(1, rc)
    local doc = core.json_decode(out)
    assert.are.same({ files = 1, tests = 2, passed = 1, failed = 1, pending = 1 }, doc.summary)
    assert.are.equal("failed", doc.tests[2].status)
    assert.are.equal(core.null, doc.error)
    local bad = mk({ ["b.lua"] = "return 42" })
    rc, out = H.run({ "policy", "test", bad, "-o", "junit" })
    assert.are.equal(2, rc)
    assert.truthy(xml_ok(out), out)
    assert.truthy(out:find('<testcase classname="' .. bad .. '" name="loading the policies">', 1, true), out)
    assert.truthy(out:find("<error message=", 1, true), out)
    rc, out = H.run({ "policy", "test", bad, "-o", "tap" })
    assert.are.equal(2, rc)
    assert.truthy(out:find("not ok 1 - loading the policies", 1, true), out)
    rc, out = H.run({ "policy", "test", bad, "-o", "json" })
    assert.are.equal(2, rc)
    assert.truthy(core.json_decode(out).error:find("b.lua", 1, true))
  end)

  it("refuses an unknown format and an unknown flag instead of ignoring them", function()
    local rc, out, err = H.run({ "policy", "test", POL, "-o", "xunit" })
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.truthy(err:find('unknown output format "xunit" (want text, junit, tap, json)', 1, true), err)
    rc, _, err = H.run({ "policy", "test", POL, "--instructions", "abc" })
    assert.are.equal(2, rc)
    assert.truthy(err:find('"abc" is not a number', 1, true), err)
  end)
end)

describe("every command's flags", function()
  local commands = {
    { "inspect" }, { "allocate" }, { "cel" }, { "run" }, { "sim" }, { "sysfs" }, { "serve" }, { "snapshot" },
    { "version" }, { "help" },
    { "policy", "test" }, { "policy", "lint" }, { "policy", "diff" }, { "policy", "bench" }, { "policy", "list" },
  }

  it("--help on every command and subcommand", function()
    for _, c in ipairs(commands) do
      local args = { table.unpack(c) }
      args[#args + 1] = "--help"
      local rc, out = H.run(args)
      assert.are.equal(0, rc, table.concat(args, " "))
      assert.truthy(out:find("usage: draengine " .. table.concat(c, " "), 1, true), out)
      args[#args] = "-h"
      assert.are.equal(0, (H.run(args)), table.concat(args, " "))
    end
  end)

  it("an unknown flag is an error naming it, on every command", function()
    for _, c in ipairs(commands) do
      local args = { table.unpack(c) }
      args[#args + 1] = "--no-such-flag"
      local rc, out, err = H.run(args)
      assert.are.equal(2, rc, table.concat(args, " "))
      assert.are.equal("", out)
      assert.truthy(err:find("--no-such-flag", 1, true), table.concat(args, " ") .. ": " .. err)
    end
  end)

  it("-v on every command", function()
    for _, c in ipairs(commands) do
      local args = { table.unpack(c) }
      args[#args + 1] = "-v"
      args[#args + 1] = "--help"
      assert.are.equal(0, (H.run(args)), table.concat(args, " "))
    end
    -- a level, as klog takes it
    local rc, _, err = H.run({ "allocate", "-v", "11", "-f", FIX })
    assert.are.equal(2, rc)
    assert.truthy(err:find("-v", 1, true) and err:find("too large", 1, true), err)
  end)

  it("takes -fFILE, -f=FILE, -ojson and --output=json as kubectl does", function()
    local want_rc, want = H.run({ "allocate", "--node", "10.140.65.248", "-f", FIX, "-f", CLAIM, "-o", "json",
                                  "--policies", POL })
    assert.are.equal(0, want_rc)
    for _, args in ipairs({
      { "allocate", "--node=10.140.65.248", "-f" .. FIX, "-f=" .. CLAIM, "-ojson", "--policies=" .. POL },
      { "allocate", "--node", "10.140.65.248", "--filename=" .. FIX, "--filename", CLAIM, "--output=json",
        "--policy-dir", POL },
    }) do
      local rc, out, err = H.run(args)
      assert.are.equal(0, rc, table.concat(args, " ") .. err)
      assert.are.equal(want, out)
    end
    local rc, out = H.run({ "inspect", "-f" .. FIX, "-ojson" })
    assert.are.equal(0, rc)
    assert.are.equal(12, core.json_decode(out).summary.devices)
    rc, out = H.run({ "policy", "diff", "--from=" .. POL, "--to", POL, "-f" .. FIX, "-ojson" })
    assert.are.equal(0, rc)
    assert.are.equal(0, core.json_decode(out).summary.devicesChanged)
  end)

  it("--policies everywhere, --policy-dir its alias", function()
    for _, flag in ipairs({ "--policies", "--policy-dir" }) do
      local rc, out = H.run({ "allocate", "--node", "10.140.65.248", "-f", FIX, "-f", CLAIM, flag, POL, "-o", "table" })
      assert.are.equal(0, rc, flag)
      assert.truthy(out:find("^policy revision %x+ %(5 policies in "), out)
      rc, out = H.run({ "inspect", "-f", FIX, flag, POL })
      assert.are.equal(0, rc, flag)
      assert.truthy(out:find("derived by numa-bridge: resource.kubernetes.io/numaNode=", 1, true), out)
      rc = H.run({ "policy", "list", flag, POL })
      assert.are.equal(0, rc, flag)
      rc = H.run({ "policy", "lint", flag, POL })
      assert.are.equal(0, rc, flag)
    end
    local rc, _, err = H.run({ "policy", "lint", POL, "--policies", POL })
    assert.are.equal(2, rc)
    assert.truthy(err:find("give the directory once", 1, true), err)
  end)

  it("refuses negative numbers everywhere, --max-search-steps included", function()
    for _, args in ipairs({
      { "allocate", "-f", FIX, "--max-search-steps", "-5" },
      { "allocate", "-f", FIX, "--max-search-steps=-1" },
      { "run", "--nodes=-2" },
      { "policy", "bench", POL, "-f", FIX, "--iterations", "-1" },
    }) do
      local rc, _, err = H.run(args)
      assert.are.equal(2, rc, table.concat(args, " "))
      assert.truthy(err:find("negative", 1, true), err)
    end
  end)
end)

describe("policy lint catches what the loader catches", function()
  it("names both policies with file:line when two write one attribute", function()
    local d = mk({
      ["a.lua"] = 'return {\n  name = "a", version = "1.0.0", api = 1,\n  domains = { "tier.example.com" },\n' ..
        '  derive = function(d) return nil end,\n}\n',
      ["b.lua"] = 'return {\n  name = "b", version = "1.0.0", api = 1,\n  domains = {\n    "other.example.com",\n' ..
        '    "tier.example.com/x",\n  },\n  derive = function(d) return nil end,\n}\n',
    })
    local rc, out = H.run({ "policy", "lint", d })
    assert.are.equal(1, rc, out)
    assert.truthy(out:find(d .. "/b.lua:5: error: policy b owns \"tier.example.com/x\", which overlaps " ..
      "\"tier.example.com\" owned by policy a (" .. d .. "/a.lua:3)", 1, true), out)
    -- the loader says the same
    local _, _, err = H.run({ "policy", "list", d })
    assert.truthy(err:find("b.lua:5: policy b owns", 1, true), err)
  end)

  it("reports every loader error at once, next to the errors of other files", function()
    local d = mk({
      ["a.lua"] = P.policy("a", { "a.example.com" }, "    y = 1\n    return nil"),
      ["b.lua"] = 'return {\n  name = "b", version = "1.0.0", api = 1, domains = {},\n  bogus = 1,\n' ..
        '  admit = function(c) return true end,\n}\n',
      ["c.lua"] = P.policy("a", { "c.example.com" }, "    return nil"),
    })
    local rc, out = H.run({ "policy", "lint", d, "-o", "json" })
    assert.are.equal(1, rc, out)
    local doc = core.json_decode(out)
    local msgs = {}
    for _, p in ipairs(doc.problems) do msgs[#msgs + 1] = p.file:match("[^/]+$") .. ":" .. p.line .. ": " .. p.message end
    local all = table.concat(msgs, "\n")
    assert.truthy(all:find("a.lua:4: assignment to global 'y'", 1, true), all)
    assert.truthy(all:find("b.lua:3: unknown field 'bogus'", 1, true), all)
    assert.truthy(all:find("c.lua:2: policy name a is already used by " .. d .. "/a.lua:2", 1, true), all)
    assert.are.equal(3, doc.summary.errors)
  end)

  it("exits 2 on a missing directory", function()
    local rc, out, err = H.run({ "policy", "lint", "/nonexistent/policies" })
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.truthy(err:find("/nonexistent/policies: no such directory", 1, true), err)
    local f = os.tmpname()
    rc, _, err = H.run({ "policy", "lint", f })
    os.remove(f)
    assert.are.equal(2, rc)
    assert.truthy(err:find("not a directory", 1, true), err)
  end)
end)
