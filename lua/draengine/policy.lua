-- draengine.policy - small helpers for policy authors.
--
--   local P = require "draengine.policy"
--   P.first(device, {"a", "b"})   first attribute that is set, and its name
--   P.gib(q)                     a quantity in GiB (float)
--   P.find_any(s, patterns)      index of the first Lua pattern matching s
--   P.contains(list, v)          true when v is in the list
--   P.set(list)                  {[v] = true, ...}
--   P.check(policy)              validate a policy table early (the engine
--                                validates again at load) and return it
local M = {}

function M.first(device, names)
  local attrs = device.attributes
  for _, n in ipairs(names) do
    local v = attrs[n]
    if v ~= nil then return v, n end
  end
  return nil
end

function M.gib(q)
  if q == nil then return nil end
  return q:to("Gi") + 0.0
end

function M.find_any(s, patterns)
  if type(s) ~= "string" then return nil end
  for i, p in ipairs(patterns) do
    if s:find(p) then return i, p end
  end
  return nil
end

function M.contains(list, v)
  for _, x in ipairs(list) do
    if x == v then return true end
  end
  return false
end

function M.set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local hooks = { derive = true, groups = true, score = true, admit = true }
local fields = { name = true, version = true, api = true, domains = true, drivers = true,
                 failure = true, weight = true, description = true }

function M.check(p)
  assert(type(p) == "table", "a policy is a table")
  for k in pairs(p) do
    if not hooks[k] and not fields[k] then error("unknown policy field '" .. tostring(k) .. "'", 2) end
  end
  assert(type(p.name) == "string", "policy name must be a string")
  assert(type(p.version) == "string" and dra.version(p.version), "policy version must be semver")
  assert(p.api == dra.api, "policy api must be " .. dra.api)
  assert(type(p.domains) == "table", "policy domains must be a list")
  return p
end

return M
