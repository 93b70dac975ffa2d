-- model_mutation_spec.lua - no input crashes the decoder: every field of every
-- corpus object replaced by values of other types and shapes must give
-- either a valid object or a located error (run under ASan by test-asan).
local core = require "draengine.core"
local H = require "support.helper"

local replacements = {
  function() return core.null end,
  function() return -1 end,
  function() return "" end,
  function() return setmetatable({}, core.json_array_mt) end,
  function() return { x = { 1, "y", true } } end,
  function() return string.rep("z", 300) end,
}

local function copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = copy(v) end
  return setmetatable(c, getmetatable(t))
end

-- every (table, key) pair in a document, in a deterministic order
local function paths(root)
  local out = {}
  local function walk(t, trail)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do
      local p = { table.unpack(trail) }
      p[#p + 1] = k
      out[#out + 1] = p
      if type(t[k]) == "table" then walk(t[k], p) end
    end
  end
  walk(root, {})
  return out
end

local function set(t, path, v)
  for i = 1, #path - 1 do t = t[path[i]] end
  t[path[#path]] = v
end

describe("decoder robustness", function()
  it("answers every mutated corpus object with a result or a located error", function()
    local shared = H.shared_dir()
    if not shared then return pending("no corpus") end
    local p = io.popen("find " .. H.shell_quote(shared .. "/corpus/manifests") .. " -name '*.yaml' | LC_ALL=C sort")
    local g = core.graph()
    local checked, refused = 0, 0
    local n = 0
    for f in p:lines() do
      local ok, docs = pcall(core.load_docs, f)
      if ok then
        for _, d in ipairs(docs) do
          local obj = d.object
          if type(obj) == "table" and type(obj.apiVersion) == "string" and
             (obj.apiVersion:find("^resource%.k8s%.io/") or obj.apiVersion == "v1") then
            local all = paths(obj)
            -- big objects (64-device slices) are sampled: at most ~120 paths each
            local step = math.max(1, #all // 120)
            for i = 1, #all, step do
              local path = all[i]
              n = n + 1
              -- a deterministic subset keeps the run short
              local r = replacements[n % #replacements + 1]
              local m = copy(obj)
              set(m, path, r())
              local res, msg = g:check(m)
              checked = checked + 1
              if res == nil then
                refused = refused + 1
                assert.truthy(msg:match("^<table>: document 1: "), msg)
              else
                assert.is_true(res)
              end
            end
          end
        end
      end
    end
    p:close()
    assert.is_true(checked > 1500, "checked " .. checked)
    assert.is_true(refused > checked / 4)
  end)
end)
