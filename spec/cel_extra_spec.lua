-- cel_extra_spec.lua - the extra CEL vectors of spec/fixtures/cel-extra
-- (upstream cases beyond the shared set, plus our own DRA cases; see
-- spec/fixtures/cel-extra/tools/gen.py) through `draengine cel --batch`,
-- scored by the shared check-cel.  Every scored vector must pass (known
-- failures, when there are any, are parked in spec/fixtures/cel-extra-failing).
local H = require "support.helper"

local function count_vectors(dir)
  local total, skipped = 0, 0
  local p = assert(io.popen("ls " .. H.shell_quote(dir), "r"))
  for name in p:lines() do
    if name:match("%.json$") then
      total = total + 1
      local body = H.read_file(dir .. "/" .. name)
      if body:match('"celGoSkips"%s*:%s*true') then skipped = skipped + 1 end
    end
  end
  p:close()
  return total, skipped
end

describe("extra CEL vectors (spec/fixtures/cel-extra)", function()
  it("all scored vectors pass", function()
    local shared = H.shared_dir()
    assert.is_not_nil(shared, "shared conformance scripts not found")
    local dir = H.root .. "/spec/fixtures/cel-extra"
    local total, skipped = count_vectors(dir)
    assert.is_true(total > 1000, "expected the generated vectors, found " .. total)
    local out, passed, failed = H.check_vectors("check-cel", dir)
    assert.is_not_nil(passed, "no summary line in:\n" .. out:sub(-2000))
    assert.are.equal(0, failed, out:sub(-4000))
    assert.are.equal(total - skipped, passed, "every vector file must be scored:\n" .. out:sub(-2000))
  end)
end)
