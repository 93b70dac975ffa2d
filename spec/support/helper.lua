-- helper.lua - shared spec utilities: paths, running the draengine binary,
-- temporary files.  Specs `require "support.helper"`.
local M = {}

M.root = os.getenv("DRAENGINE_ROOT") or "."
M.bin = os.getenv("DRAENGINE_BIN") or (M.root .. "/build/draengine")
M.asan = os.getenv("DRAENGINE_ASAN") == "1"

-- Where the shared conformance vectors and corpus live: ../shared next to
-- the checkout, or the copy vendored under spec/fixtures/shared.
function M.shared_dir()
  for _, d in ipairs({ M.root .. "/../shared", M.root .. "/spec/fixtures/shared" }) do
    local f = io.open(d .. "/conformance/README.md", "r")
    if f then f:close(); return d end
  end
  return nil
end

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.shell_quote = shell_quote

-- Run the binary with arguments (a list); returns exit code, stdout, stderr.
-- `stdin` (optional) is written to a temp file and redirected.
-- Run a shared conformance checker (check-alloc, check-cel) on a directory of
-- vectors with this binary: its output and the passed and failed counts of
-- its last line (nil when it printed none).  python must not run under the
-- ASan LD_PRELOAD; the binary links ASan itself.
function M.check_vectors(checker, dir)
  local shared = assert(M.shared_dir(), "conformance checker not found")
  local cmd = string.format("env -u LD_PRELOAD python3 %s --bin %s %s 2>&1",
    shell_quote(shared .. "/conformance/" .. checker), shell_quote(M.bin), shell_quote(dir))
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  p:close()
  local passed, failed = out:match("(%d+) passed, (%d+) failed%s*$")
  return out, tonumber(passed), tonumber(failed)
end

-- Files for specs: a fresh temporary directory, its removal, a file written
-- whole, and a shell command that must succeed.
function M.tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("l")
  p:close()
  return d
end

function M.rmdir(d) os.execute("rm -rf " .. shell_quote(d)) end

function M.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function M.sh(cmd) assert(os.execute(cmd), "command failed: " .. cmd) end

function M.run(args, stdin)
  local parts = { shell_quote(M.bin) }
  for _, a in ipairs(args) do parts[#parts + 1] = shell_quote(a) end
  local out, err = os.tmpname(), os.tmpname()
  local cmd = table.concat(parts, " ") .. " >" .. out .. " 2>" .. err
  local inf
  if stdin then
    inf = os.tmpname()
    local f = assert(io.open(inf, "wb")); f:write(stdin); f:close()
    cmd = cmd .. " <" .. inf
  end
  local ok, how, code = os.execute(cmd)
  local function slurp(p)
    local f = io.open(p, "rb"); local s = f and f:read("a") or ""; if f then f:close() end
    os.remove(p); return s
  end
  if inf then os.remove(inf) end
  local rc = (how == "exit") and code or 128 + (code or 0)
  if ok == true then rc = 0 end
  return rc, slurp(out), slurp(err)
end

function M.write_temp(content, suffix)
  local p = os.tmpname() .. (suffix or "")
  local f = assert(io.open(p, "wb")); f:write(content); f:close()
  return p
end

-- The files below dir whose names match the find(1) pattern pat, sorted
-- bytewise (the same order on every machine).
function M.find_files(dir, pat)
  local out = {}
  local p = io.popen("find " .. shell_quote(dir) .. " -name '" .. pat .. "' | LC_ALL=C sort")
  for f in p:lines() do out[#out + 1] = f end
  p:close()
  return out
end

function M.read_file(p)
  local f = assert(io.open(p, "rb")); local s = f:read("a"); f:close(); return s
end

-- The documents of a JSON-lines file (a missing file has none).
function M.json_lines(path)
  local out = {}
  local f = io.open(path, "rb")
  if not f then return out end
  local core = require "draengine.core"
  for line in f:lines() do out[#out + 1] = core.json_decode(line) end
  f:close()
  return out
end

return M
