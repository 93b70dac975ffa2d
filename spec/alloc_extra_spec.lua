-- alloc_extra_spec.lua - more allocator conformance vectors (spec/fixtures/alloc-extra):
-- the upstream v1.36.2 table cases that ../shared/conformance/alloc does not hold,
-- three cases new in v0.37.0-alpha.2, and draengine's own vectors for rules of
-- dra-model.md §2.  Run through the allocate command by the shared checker; all
-- must pass.  Known divergences live in spec/fixtures/alloc-extra-failing (not run
-- here; see its README.md).
local H = require "support.helper"

describe("extra allocator conformance vectors", function()
  it("pass 100% through draengine allocate --node", function()
    local dir = assert(H.shared_dir(), "conformance checker not found")
    local vectors = H.root .. "/spec/fixtures/alloc-extra"
    -- python must not run under the ASan LD_PRELOAD; the binary links ASan itself
    local cmd = string.format("env -u LD_PRELOAD python3 %s --bin %s %s 2>&1",
      H.shell_quote(dir .. "/conformance/check-alloc"), H.shell_quote(H.bin),
      H.shell_quote(vectors))
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    local passed, failed = out:match("(%d+) passed, (%d+) failed%s*$")
    assert.is_not_nil(passed, out)
    assert.are.equal(0, tonumber(failed), out)
    -- 73 upstream v1.36.2 cases + 3 v0.37.0-alpha.2 cases + 48 draengine vectors
    assert.is_true(tonumber(passed) >= 124, out)
  end)
end)
