-- draengine.test - a busted-style spec runner that runs *inside* the
-- policy sandbox (busted itself needs io/os/package and cannot).
--
-- `draengine policy test` gives every spec file a fresh VM with the same
-- environment as the hooks, plus these globals:
--   describe(name, fn)  it(name, fn)  pending(name)  before_each(fn)
--   after_each(fn)  setup(fn)  teardown(fn)  lazy_setup  lazy_teardown
--   finally(fn)  assert (luassert style: assert.are.equal(e, a),
--   assert.are.same, assert.is_true, assert.is_nil, assert.truthy,
--   assert.has_error(fn [, msg]), assert.error_matches(fn, pat),
--   assert.matches(pat, s), assert.near(e, a, tol), assert.is_not.equal, ...)
-- and dra.test (fixtures: devices, snapshots, policies; see testapi.c).
--
-- Each `it` runs under its own budget: a looping or exploding test fails
-- alone and the file goes on.
local M = {}

local unpack = table.unpack

-- ---- assertions ------------------------------------------------------------

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  if type(v) ~= "table" then return tostring(v) end
  local parts, n = {}, 0
  for k, x in pairs(v) do
    n = n + 1
    if n > 20 then parts[#parts + 1] = "..."; break end
    parts[#parts + 1] = "[" .. show(k) .. "] = " .. show(x)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end
M.show = show

local function deep_equal(a, b, seen)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  for k, v in pairs(a) do
    if not deep_equal(v, b[k], seen) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
M.deep_equal = deep_equal

local function fail(msg, level)
  error(msg, (level or 1) + 2)
end

-- Each assertion: function(negated, ...) -> ok, message
local assertions = {}

assertions.equal = function(e, a)
  return e == a, "expected " .. show(e) .. ", got " .. show(a)
end
assertions.equals = assertions.equal
assertions.same = function(e, a)
  return deep_equal(e, a), "expected (deep) " .. show(e) .. ", got " .. show(a)
end
assertions["true"] = function(v) return v == true, "expected true, got " .. show(v) end
assertions["false"] = function(v) return v == false, "expected false, got " .. show(v) end
assertions["nil"] = function(v) return v == nil, "expected nil, got " .. show(v) end
assertions.truthy = function(v) return not not v, "expected a truthy value, got " .. show(v) end
assertions.falsy = function(v) return not v, "expected a falsy value, got " .. show(v) end
assertions.near = function(e, a, tol)
  return type(a) == "number" and math.abs(e - a) <= tol,
      "expected " .. show(a) .. " within " .. show(tol) .. " of " .. show(e)
end
assertions.matches = function(pat, s)
  return type(s) == "string" and s:find(pat) ~= nil, "expected " .. show(s) .. " to match " .. show(pat)
end
assertions.match = assertions.matches
for _, t in ipairs({ "string", "number", "table", "boolean", "function", "userdata" }) do
  assertions[t] = function(v) return type(v) == t, "expected a " .. t .. ", got " .. show(v) end
end

local function errmsg(e)
  if type(e) == "string" then return e end
  return tostring(e)
end

-- has_error(fn [, expected]): expected is a plain substring of the message
assertions.error = function(fn, expected)
  local ok, e = pcall(fn)
  if ok then return false, "expected an error, got none" end
  if expected == nil then return true, "expected no error, got " .. show(errmsg(e)) end
  local m = errmsg(e)
  return m:find(expected, 1, true) ~= nil,
      "expected an error containing " .. show(expected) .. ", got " .. show(m)
end
assertions.errors = assertions.error
assertions.error_matches = function(fn, pat)
  local ok, e = pcall(fn)
  if ok then return false, "expected an error, got none" end
  local m = errmsg(e)
  return m:find(pat) ~= nil, "expected an error matching " .. show(pat) .. ", got " .. show(m)
end

local modifiers = { is = true, are = true, has = true, was = true, does = true, to = true, be = true }
local negators = { no = true, ["not"] = true }

local function chain(negated)
  local obj = {}
  return setmetatable(obj, {
    __index = function(_, key)
      local neg = negated
      local words = {}
      for w in tostring(key):gmatch("[^_]+") do words[#words + 1] = w end
      local term
      for i, w in ipairs(words) do
        if negators[w] then
          neg = not neg
        elseif modifiers[w] then
          -- no-op word
        else
          term = table.concat(words, "_", i)
          break
        end
      end
      if term == nil then return chain(neg) end
      local fn = assertions[term]
      if not fn then error("unknown assertion '" .. tostring(key) .. "'", 2) end
      return function(...)
        local n = select("#", ...)
        local args = { ... }
        local ok, msg = fn(...)
        local custom = args[n] ~= nil and type(args[n]) == "string" and n > 2 and term ~= "near" and args[n] or nil
        if neg then ok = not ok; msg = "(negated) " .. msg end
        if not ok then fail(custom and (custom .. ": " .. msg) or msg) end
        return ...
      end
    end,
    __call = function(_, v, msg, ...)
      if not v then error(msg or "assertion failed!", 2) end
      return v, msg, ...
    end,
  })
end

M.assert = chain(false)

-- ---- collection and running ------------------------------------------------

local function new_block(name, parent)
  return { name = name, parent = parent, children = {}, before = {}, after = {}, setup = {}, teardown = {} }
end

local function fullname(block, name)
  local parts = { name }
  local b = block
  while b and b.parent do
    table.insert(parts, 1, b.name)
    b = b.parent
  end
  return table.concat(parts, " ")
end

local function where(level)
  -- the line of the spec that declared the test
  local ok, e = pcall(error, "", level + 2)
  if type(e) == "string" then return e:match("^(.-:%d+):") end
  return nil
end

-- A runner: R.G holds the spec globals; R:run(chunk, protect) returns the
-- list of results {name=, status="ok"|"fail"|"pending", message=, where=}.
function M.new()
  local R = {}
  local root = new_block("", nil)
  local current = root
  local finals = nil
  local G = {}

  function G.describe(name, fn)
    local b = new_block(tostring(name), current)
    current.children[#current.children + 1] = b
    local saved = current
    current = b
    fn()
    current = saved
  end
  G.context = G.describe
  G.insulate = G.describe
  G.expose = G.describe

  function G.it(name, fn)
    current.children[#current.children + 1] = { test = true, name = tostring(name), fn = fn,
                                                 parent = current, where = where(2) }
  end
  G.spec = G.it
  G.test = G.it

  function G.pending(name)
    current.children[#current.children + 1] = { test = true, name = tostring(name), parent = current,
                                                 where = where(2) }
  end

  function G.before_each(fn) current.before[#current.before + 1] = fn end
  function G.after_each(fn) current.after[#current.after + 1] = fn end
  function G.setup(fn) current.setup[#current.setup + 1] = fn end
  function G.teardown(fn) current.teardown[#current.teardown + 1] = fn end
  G.lazy_setup = G.setup
  G.strict_setup = G.setup
  G.lazy_teardown = G.teardown
  G.strict_teardown = G.teardown
  function G.finally(fn)
    if not finals then error("finally() outside a test", 2) end
    finals[#finals + 1] = fn
  end
  G.assert = M.assert

  R.G = G
  function R:run(chunk, protect)
  local results = {}
  local function record(t, status, message)
    results[#results + 1] = { name = fullname(t.parent, t.name), status = status, message = message,
                              where = t.where }
  end

  -- collection: run the file's top level and the describe bodies
  local ok, err, line = protect(chunk)
  if not ok then
    results[#results + 1] = { name = "(loading the spec file)", status = "fail", message = err, where = line }
    return results
  end

  local function befores(b, list)
    if b.parent then befores(b.parent, list) end
    for _, f in ipairs(b.before) do list[#list + 1] = f end
    return list
  end
  local function afters(b, list)
    for _, f in ipairs(b.after) do list[#list + 1] = f end
    if b.parent then afters(b.parent, list) end
    return list
  end

  local function run_block(b)
    local ok_setup, e_setup = true, nil
    for _, f in ipairs(b.setup) do
      local ok2, e2 = protect(f)
      if not ok2 then ok_setup, e_setup = false, e2; break end
    end
    for _, c in ipairs(b.children) do
      if c.test then
        if not c.fn then
          record(c, "pending", nil)
        elseif not ok_setup then
          record(c, "fail", "setup failed: " .. tostring(e_setup))
        else
          finals = {}
          local okt, et = true, nil
          for _, f in ipairs(befores(c.parent, {})) do
            local o, e = protect(f)
            if not o then okt, et = false, "before_each: " .. tostring(e); break end
          end
          if okt then okt, et = protect(c.fn) end
          for _, f in ipairs(finals) do
            local o, e = protect(f)
            if not o and okt then okt, et = false, "finally: " .. tostring(e) end
          end
          for _, f in ipairs(afters(c.parent, {})) do
            local o, e = protect(f)
            if not o and okt then okt, et = false, "after_each: " .. tostring(e) end
          end
          finals = nil
          record(c, okt and "ok" or "fail", et)
        end
      else
        run_block(c)
      end
    end
    -- a teardown that fails is a failure of its block, as busted reports it
    for _, f in ipairs(b.teardown) do
      local o, e, line = protect(f)
      if not o then
        results[#results + 1] = { name = (b.parent and fullname(b.parent, b.name) .. " " or "") .. "(teardown)",
                                  status = "fail", message = "teardown: " .. tostring(e), where = line }
      end
    end
  end
  run_block(root)
  return results
  end
  return R
end

-- Entry point used by `draengine policy test` for one spec file.
function M.main()
  local R = M.new()
  local chunk = dra.test.spec_chunk(M.env(R.G))
  return R:run(chunk, dra.test.protect)
end

-- The _ENV a spec file runs with: the test globals first, then the sandbox.
function M.env(G)
  return setmetatable({}, {
    __index = function(_, k)
      local v = G[k]
      if v ~= nil then return v end
      local ok, w = pcall(function() return _ENV[k] end)
      if not ok then
        error("undeclared global '" .. tostring(k) .. "' (spec files see the sandbox globals and the test API)", 2)
      end
      return w
    end,
    __newindex = function(_, k)
      error("assignment to global '" .. tostring(k) .. "' (spec files use locals)", 2)
    end,
    __metatable = "read-only",
  })
end

return M
