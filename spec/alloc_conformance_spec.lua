-- alloc_conformance_spec.lua - the allocator conformance vectors
-- (../shared/conformance/alloc, translated from upstream's allocator table
-- tests) run through the allocate command by the shared checker; every
-- vector must pass.
local H = require "support.helper"

describe("allocator conformance vectors", function()
  it("pass 100% through draengine allocate --node", function()
    local dir = assert(H.shared_dir(), "conformance vectors not found")
    -- python must not run under the ASan LD_PRELOAD; the binary links ASan itself
    local cmd = string.format("env -u LD_PRELOAD python3 %s --bin %s %s 2>&1",
      H.shell_quote(dir .. "/conformance/check-alloc"), H.shell_quote(H.bin),
      H.shell_quote(dir .. "/conformance/alloc"))
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    local passed, failed = out:match("(%d+) passed, (%d+) failed%s*$")
    assert.is_not_nil(passed, out)
    assert.are.equal(0, tonumber(failed), out)
    -- the directory holds 146 vectors today; more may be added
    assert.is_true(tonumber(passed) >= 146, out)
    -- errors carry upstream's wording
    local matched, total = out:match("error messages containing the upstream substring: (%d+)/(%d+)")
    assert.is_not_nil(matched, out)
    assert.are.equal(tonumber(total), tonumber(matched), out)
  end)
end)
