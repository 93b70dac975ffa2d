-- watch.lua - run a long-lived draengine command (inspect/allocate --watch)
-- in the background and follow its output.  Used by spec/watch_*_spec.lua.
local H = require "support.helper"

local M = {}
local Proc = {}
Proc.__index = Proc

local function sleep(s) os.execute("sleep " .. tostring(s)) end
M.sleep = sleep

local function slurp(p)
  local f = io.open(p, "rb"); if not f then return "" end
  local s = f:read("a"); f:close(); return s
end

-- Start `draengine <args>`: stdout and stderr go to files, a wrapper shell
-- records the exit code; the pid is draengine's own ($! of a plain command).
function M.start(args)
  local out = os.tmpname()
  local parts = { H.shell_quote(H.bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = H.shell_quote(a) end
  local pidf = out .. ".pid"
  local inner = table.concat(parts, " ") .. " >" .. out .. " 2>" .. out .. ".err & echo $! >" .. pidf ..
    ".tmp; mv " .. pidf .. ".tmp " .. pidf .. "; wait $!; echo $? >" .. out .. ".rc"
  assert(os.execute("sh -c " .. H.shell_quote(inner) .. " >/dev/null 2>&1 &"))
  local p = setmetatable({ out = out }, Proc)
  for _ = 1, 200 do
    local s = slurp(pidf)
    if s ~= "" then p.pid = tonumber(s); break end
    sleep(0.02)
  end
  os.remove(pidf)
  assert(p.pid, "the command did not start")
  return p
end

function Proc:stdout() return slurp(self.out) end
function Proc:stderr() return slurp(self.out .. ".err") end

-- Poll until fn(stdout, stderr) is true (up to `secs`, default 10 s);
-- returns the result, or false with the output so far.
function Proc:wait_until(fn, secs)
  local tries = math.floor((secs or 10) / 0.03)
  for _ = 1, tries do
    local v = fn(self:stdout(), self:stderr())
    if v then return v end
    sleep(0.03)
  end
  return fn(self:stdout(), self:stderr())
end

-- How many times `text` (plain) occurs in s.
function M.count(s, text)
  local c, at = 0, 1
  while true do
    local i, j = s:find(text, at, true)
    if not i then return c end
    c, at = c + 1, j + 1
  end
end

-- Wait until stdout holds `text` at least `n` times (plain text, default 1).
function Proc:wait_for(text, n)
  return self:wait_until(function(out) return M.count(out, text) >= (n or 1) end)
end

-- Wait until stdout has n lines.
function Proc:wait_lines(n)
  return self:wait_until(function(out)
    local c = 0
    for _ in out:gmatch("\n") do c = c + 1 end
    return c >= n
  end)
end

function Proc:rc()
  local s = slurp(self.out .. ".rc")
  return s ~= "" and tonumber(s) or nil
end

-- SIGTERM (or `sig`), wait for the exit; returns exit code, stdout, stderr.
function Proc:stop(sig)
  os.execute("kill -" .. (sig or "TERM") .. " " .. self.pid .. " 2>/dev/null")
  local rc = self:wait_until(function() return self:rc() end, 15)
  if not rc then
    os.execute("kill -KILL " .. self.pid .. " 2>/dev/null")
    self:wait_until(function() return self:rc() end, 5)
  end
  local out, err = self:stdout(), self:stderr()
  for _, suffix in ipairs({ "", ".err", ".rc" }) do os.remove(self.out .. suffix) end
  return rc or nil, out, err
end

-- A fresh temporary directory, and helpers to fill it (support.helper's).
M.tmpdir, M.rmdir, M.write, M.sh = H.tmpdir, H.rmdir, H.write, H.sh

-- Manifests: a node, a one-GPU slice on it, the class, a claim and its pod.
function M.node(name)
  return string.format("apiVersion: v1\nkind: Node\nmetadata: {name: %s}\n", name)
end

function M.slice(node, devices, model)
  local s = string.format([[
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: %s-gpu}
spec:
  driver: gpu.example.com
  nodeName: %s
  pool: {name: %s, generation: 1, resourceSliceCount: 1}
  devices:
]], node, node, node)
  for i = 0, (devices or 1) - 1 do
    s = s .. string.format("  - name: gpu-%d\n    attributes:\n      model: {string: %s}\n", i, model or "A")
  end
  return s
end

M.class = [[
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
]]

-- The cluster both watch specs start from: two nodes with one GPU each and
-- the class that selects them, one file per object kind and node.
function M.cluster(dir)
  M.write(dir .. "/nodes.yaml", M.node("node-a") .. "---\n" .. M.node("node-b"))
  M.write(dir .. "/slice-a.yaml", M.slice("node-a", 1))
  M.write(dir .. "/slice-b.yaml", M.slice("node-b", 1))
  M.write(dir .. "/class.yaml", M.class)
end

function M.pod(name)
  return string.format([[
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, uid: %s-uid}
spec:
  containers: [{name: c, image: x}]
  resourceClaims: [{name: gpu, resourceClaimName: %s-gpu}]
]], name, name, name, name)
end

return M
