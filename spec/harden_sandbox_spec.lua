-- harden_sandbox_spec.lua - library functions that loop in C (no VM
-- instructions, so no budget hook) against the instruction budget and the
-- deadline: huge ranges, lying __len metamethods, C functions as
-- metamethods and comparators, strings that make every call slow, and the
-- same through allocate, run, policy test, policy lint and serve.  Every
-- attack ends promptly with the reason that applies (a timeout as
-- "timeout"), cannot be swallowed by pcall, and leaves the VM working.
local core = require "draengine.core"
local H = require "support.helper"

local SLOW = H.asan and 4 or 1
local MEM = 64 * 1024 * 1024

local function now()
  local p = io.popen("date +%s.%N")
  local t = tonumber(p:read("l"))
  p:close()
  return t
end

-- run code on vm; it must fail with `reason` within `secs` wall seconds
local function stops(vm, code, reason, pattern, secs)
  local t0 = now()
  local r = vm:run(code)
  local took = now() - t0
  assert.is_false(r.ok, code .. " returned " .. tostring(r.value))
  assert.are.equal(reason, r.reason, code .. ": " .. tostring(r.message))
  if pattern then assert.truthy(r.message:find(pattern, 1, true), r.message) end
  assert.is_true(took < (secs or 1) * SLOW, string.format("%s took %.2f s", code, took))
  local ok = vm:run("return 6 * 7")
  assert.is_true(ok.ok, ok.message)
  assert.are.equal(42, ok.value)
  return r, took
end

local function works(vm, code, expected)
  local r = vm:run(code)
  assert.is_true(r.ok, code .. ": " .. tostring(r.message))
  if expected ~= nil then assert.are.same(expected, r.value) end
  return r
end

local LEN = "setmetatable({}, {__len = function() return %s end})"

describe("table functions with a range or a length the caller chooses", function()
  local vm
  -- these stops are the instruction budget's: the deadline is far away, or a loaded ASan run fires it first
  setup(function() vm = core.policy_vm({ instructions = 1000000, memory = MEM, deadline_ms = 10000 }) end)
  teardown(function() vm:close() end)

  it("table.move of a huge range is refused up front", function()
    stops(vm, "table.move({}, 1, 1e12, 2)", "instructions", "table.move")
    stops(vm, "table.move({}, -2^40, 2^40, 1, {})", "instructions", "table.move")
    stops(vm, "table.move({}, -2^62, 2^62, 1, {})", "error", "too many elements to move")
    stops(vm, "table.move('abc', 1, 1e12, 1, {})", "instructions", "table.move") -- a string reads like a table
    -- two moves within the budget each, over it together (a slow machine may reach the deadline first)
    local patient = core.policy_vm({ instructions = 1000000, memory = MEM, deadline_ms = 20000 })
    stops(patient, "local t = {} table.move(t, 1, 600000, 2) table.move(t, 1, 600000, 2)", "instructions", nil, 20)
    patient:close()
    works(vm, "local t = table.move({1, 2, 3}, 1, 3, 2) return t[1] + t[2] + t[3] + t[4]", 7)
  end)

  it("insert and remove on a table whose __len claims 1e12", function()
    stops(vm, "table.insert(" .. LEN:format("1e12") .. ", 1, 'x')", "instructions", "table.insert")
    stops(vm, "table.remove(" .. LEN:format("1e12") .. ", 1)", "instructions", "table.remove")
    stops(vm, "table.insert(" .. LEN:format("math.maxinteger") .. ", 1, 'x')", "instructions")
    works(vm, "local t = " .. LEN:format("math.mininteger") .. " table.remove(t) return 1", 1)
    works(vm, "local t = {1, 2, 3} table.insert(t, 1, 0) table.remove(t, 2) return table.concat(t, ',')", "0,2,3")
  end)

  it("concat, unpack and sort over lying lengths and C metamethods", function()
    -- every element produced by a C function (type returns "table"), no Lua runs
    local lying = "setmetatable({}, {__index = type, __len = function() return %s end})"
    stops(vm, "return #table.concat(" .. lying:format("1e9") .. ")", "instructions", "table.concat")
    stops(vm, "return select('#', table.unpack(" .. lying:format("5e6") .. "))", "instructions", "table.unpack")
    stops(vm, "table.sort(" .. lying:format("2^31 - 2") .. ")", "instructions", "table.sort")
    stops(vm, "table.sort(" .. LEN:format("2^31 - 2") .. ", rawequal)", "instructions", "table.sort")
    -- within the budget, a huge result is a memory trip, before it is built
    stops(vm, "return #table.concat(setmetatable({}, {__index = function() return ('x'):rep(60000) end, " ..
      "__len = function() return 100 end}))", "memory", "table.concat")
    works(vm, "return #table.concat(" .. lying:format("1000") .. ")", 5000)
  end)

  it("pcall, xpcall and coroutines cannot swallow the stop", function()
    stops(vm, "local ok = pcall(table.move, {}, 1, 1e12, 2) return 'survived'", "instructions")
    stops(vm, "for i = 1, 10 do pcall(table.insert, " .. LEN:format("1e12") .. ", 1, 1) end return 'survived'",
      "instructions")
    stops(vm, "xpcall(table.sort, function() return 'handled' end, " .. LEN:format("2^31-2") .. ") return 'survived'",
      "instructions")
    stops(vm, "local co = coroutine.wrap(function() table.move({}, 1, 1e12, 2) end) pcall(co) return 'survived'",
      "instructions")
  end)

  it("sort is a deterministic stable merge sort, whatever the comparator", function()
    works(vm, [[
local t = {}
for i = 1, 200 do t[i] = {k = i % 7, i = i} end
table.sort(t, function(a, b) return a.k < b.k end)
for i = 2, #t do
  local a, b = t[i - 1], t[i]
  if a.k > b.k or (a.k == b.k and a.i > b.i) then return "unstable at " .. i end
end
return "ok"]], "ok")
    -- inconsistent comparators end, and give a permutation
    works(vm, "local t = {} for i = 1, 1000 do t[i] = i end table.sort(t, function() return true end) " ..
      "local s = 0 for i = 1, #t do s = s + t[i] end return s", 500500)
    works(vm, "local t = {} for i = 1, 1000 do t[i] = i end table.sort(t, rawequal) return t[1] + t[1000]", 1001)
    -- a comparator that loops is the budget's
    stops(vm, "table.sort({3, 2, 1}, function() while true do end end)", "instructions")
    -- same result every run
    local a = works(vm, "local t = {} for i = 1, 500 do t[i] = (i * 7919) % 13 end table.sort(t) return table.concat(t, ',')")
    local b = works(vm, "local t = {} for i = 1, 500 do t[i] = (i * 7919) % 13 end table.sort(t) return table.concat(t, ',')")
    assert.are.equal(a.value, b.value)
  end)
end)

describe("calls that are slow because their data is big", function()
  local vm
  -- a huge instruction budget: only the deadline can stop these
  setup(function() vm = core.policy_vm({ instructions = 4000000000, memory = 256 * 1024 * 1024, deadline_ms = 60 }) end)
  teardown(function() vm:close() end)

  it("gsub whose replacement calls string.rep is a timeout, not a memory failure", function()
    stops(vm, "local s = ('x'):rep(60000) return #s:gsub('.', function(c) return c:rep(200000) end)", "timeout",
      "deadline exceeded")
  end)

  it("loops of scans over a long string stop at the deadline", function()
    local big = "local s = ('ab'):rep(2^19) "
    stops(vm, big .. "local n = 0 while true do n = n + utf8.len(s) end", "timeout")
    stops(vm, big .. "while true do local _ = tonumber(s) end", "timeout")
    stops(vm, big .. "local t = s .. '' while true do local _ = rawequal(s, t) end", "timeout")
    stops(vm, big .. "while true do local _ = s:upper() end", "timeout")
    stops(vm, "local s = 'a' .. ('\\x80'):rep(2^20 - 1) local f = utf8.codes(s) while true do f(s, 1) end", "timeout")
    stops(vm, "local s = ('a'):rep(3000) while true do s:match('^(a-)(a-)b') end", "timeout")
    stops(vm, "local s = ('a'):rep(3000) while true do for _ in s:gmatch('(a-)(a-)b') do end end", "error",
      "pattern too complex")
    stops(vm, "local s = ('x'):rep(2^19) while true do local _ = string.format('%s%s', s, s) end", "timeout")
  end)

  it("next over a big sparse table, and pairs over a big one, are charged", function()
    stops(vm, "local t = {} for i = 1, 2^20 do t[i] = i end for i = 1, 2^20 - 1 do t[i] = nil end " ..
      "while true do next(t) end", "timeout")
    -- the instruction budget is what this checks: the deadline is far away
    -- so that a loaded machine cannot make it fire first
    local small = core.policy_vm({ instructions = 3000000, memory = MEM, deadline_ms = 600000 })
    stops(small, "local t = {} for i = 1, 100000 do t[i] = i end while true do for _ in pairs(t) do break end end",
      "instructions", nil, 60)
    small:close()
  end)
end)

describe("strings", function()
  local vm
  setup(function() vm = core.policy_vm({ instructions = 100000000, memory = MEM, deadline_ms = 2000 }) end)
  teardown(function() vm:close() end)

  it("no string passes 16 x max_subject (1 MiB), however it is made", function()
    stops(vm, "local s = ('x'):rep(2^20) return #(s .. s)", "memory", "at most 1048576 bytes per string", 3)
    stops(vm, "local s = ('x'):rep(2^19) return #s:rep(3)", "error", "string.rep result too large")
    stops(vm, "local s = ('x'):rep(2^19) return #string.format('%s%s%s', s, s, s)", "memory", "per string", 3)
    stops(vm, "local s = ('x'):rep(2^19) return #s:gsub('x', 'yyy', 60000)", "error", "subject too long")
    works(vm, "return #(('x'):rep(2^20 - 100) .. ('y'):rep(100))", 2 ^ 20)
  end)

  it("quantity texts are bounded like version texts (parsed in C on every use)", function()
    stops(vm, "return dra.quantity(('1'):rep(1000))", "error", "longer than 256 bytes")
    stops(vm, "local q = dra.quantity('1Gi') return q < ('9'):rep(100000)", "error", "longer than 256 bytes")
    works(vm, "return dra.quantity('80Gi'):to('Gi')", 80)
  end)

  it("dra.log builds only what it shows", function()
    works(vm, "local s = ('x'):rep(2^20) for i = 1, 100 do dra.log(s, s, s) end return 1", 1)
  end)
end)

-- ---- the commands --------------------------------------------------------------

local HOSTILE = {
  move = [[return { name = "mover", version = "1.0.0", api = 1, domains = { "m.example.com" },
  derive = function(d) table.move({}, 1, 1e12, 2) return {} end }]],
  insert = [[return { name = "inserter", version = "1.0.0", api = 1, domains = { "i.example.com" },
  derive = function(d) table.insert(setmetatable({}, {__len = function() return 1e12 end}), 1, d.name) return {} end }]],
  gsub = [[return { name = "gsubber", version = "1.0.0", api = 1, domains = { "g.example.com" },
  derive = function(d) local s = ('x'):rep(60000) s:gsub('.', function(c) return c:rep(200000) end) return {} end }]],
}

local function policy_dir(files)
  local d = H.tmpdir()
  for name, text in pairs(files) do
    local sub = name:match("^(.*)/")
    if sub then H.sh("mkdir -p " .. H.shell_quote(d .. "/" .. sub)) end
    H.write(d .. "/" .. name, text)
  end
  return d
end

local function timed_run(args, secs)
  local t0 = now()
  local rc, out, err = H.run(args)
  local took = now() - t0
  assert.is_true(took < secs * SLOW, table.concat(args, " ") .. string.format(" took %.1f s", took))
  return rc, out, err
end

describe("hostile policies in every command", function()
  local fix = H.root .. "/spec/fixtures/base/multi.yaml"

  it("allocate and run report them, refuse the revision and finish", function()
    for name, text in pairs(HOSTILE) do
      local d = policy_dir({ [name .. ".lua"] = text })
      local rc, _, err = timed_run({ "allocate", "-f", fix, "--policies", d, "-o", "json" }, 20)
      local want = name == "gsub" and "timeout" or "instructions"
      assert.are.equal(2, rc, err) -- its hooks fail on the devices: refused, as everywhere
      assert.truthy(err:find(want, 1, true), name .. ": " .. err)
      assert.truthy(err:find("hook failures: revision", 1, true), err)
      if name ~= "gsub" then assert.truthy(err:find("table." .. name, 1, true), err) end
      local rc2, out2, err2 = timed_run({ "run", "--nodes", "2", "--max-pods", "20", "--policies", d }, 60)
      assert.are.equal(2, rc2, out2 .. err2)
      assert.truthy(err2:find(want, 1, true), name .. ": " .. err2)
      H.rmdir(d)
    end
  end)

  it("policy test and policy lint finish with the reason", function()
    local d = policy_dir({
      ["ok.lua"] = [[return { name = "ok", version = "1.0.0", api = 1, domains = { "ok.example.com" },
  derive = function(d) return {} end }]],
      ["spec/attack_spec.lua"] = [[
describe("attacks", function()
  it("moves", function() table.move({}, 1, 1e12, 2) end)
  it("inserts", function() table.insert(setmetatable({}, {__len = function() return 1e12 end}), 1, 1) end)
  it("sorts", function() table.sort(setmetatable({}, {__len = function() return 2^31 - 2 end})) end)
  it("still runs", function() assert.are.equal(2, 1 + 1) end)
end)]],
    })
    local rc, out, err = timed_run({ "policy", "test", "-v", d }, 30)
    assert.are.equal(1, rc, err)
    assert.truthy(out:find("table.move", 1, true), out)
    assert.truthy(out:find("table.insert", 1, true), out)
    assert.truthy(out:find("table.sort", 1, true), out)
    assert.truthy(out:find("instructions budget of a test", 1, true), out)
    assert.truthy(out:find("1 passed", 1, true) or out:find("passed: 1", 1, true) or out:find("still runs", 1, true), out)
    H.rmdir(d)
    -- lint runs a policy's top level under the load budget
    d = policy_dir({ ["top.lua"] = "table.move({}, 1, 1e12, 2)\n" .. HOSTILE.move })
    rc, out, err = timed_run({ "policy", "lint", d }, 30)
    assert.are.equal(1, rc, out .. err)
    assert.truthy((out .. err):find("table.move", 1, true), out .. err)
    H.rmdir(d)
  end)

  it("serve keeps answering /livez and keeps scheduling while a policy attacks", function()
    local K = require "support.kubeapi"
    local S = require "support.serve"
    local srv = K.start{ seed = 4 }
    local d = policy_dir({ ["gsub.lua"] = HOSTILE.gsub, ["insert.lua"] = HOSTILE.insert })
    -- the revision is accepted on a cluster without devices (a revision whose
    -- hooks fail on the devices at start is refused: policy_verdict_spec);
    -- the attack comes with the devices that arrive after it
    local p = S.start(srv, { "--leader-elect=false", "--policy-dir", d })
    K.wait_for(function() local st = p:http("/readyz") return st == 200 end, 20 * SLOW, 0.1)
    srv:load(S.cluster(2, 4))
    for _ = 1, 10 do
      local t0 = now()
      local st = p:http("/livez")
      assert.are.equal(200, st)
      assert.is_true(now() - t0 < 2 * SLOW)
      os.execute("sleep 0.1")
    end
    -- and pods still get scheduled (the failing hooks fail closed, for their own facts only)
    srv:load{ K.claim("default", "c1", "gpu", 1), K.pod("default", "p1", { claims = { { name = "gpu",
      resourceClaimName = "c1" } } }) }
    K.wait_for(function()
      local pod = srv:get("/api/v1/namespaces/default/pods/p1")
      return pod and pod.spec and pod.spec.nodeName
    end, 20 * SLOW, 0.1)
    assert.truthy(srv:get("/api/v1/namespaces/default/pods/p1").spec.nodeName)
    local err = p:stderr()
    local reports = S.stop_all({ p })
    srv:stop()
    H.rmdir(d)
    assert.are.same({}, reports)
    assert.truthy(err:find("instructions", 1, true) and err:find("table.insert", 1, true), err)
    assert.truthy(err:find("timeout", 1, true), err)
  end)
end)
