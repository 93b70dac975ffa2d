-- alloc_conformance_spec.lua - the allocator conformance vectors
-- (../shared/conformance/alloc, translated from upstream's allocator table
-- tests) run through the allocate command by the shared checker; every
-- vector must pass.
local H = require "support.helper"

describe("allocator conformance vectors", function()
  it("pass 100% through draengine allocate --node", function()
    local dir = assert(H.shared_dir(), "conformance vectors not found")
    local out, passed, failed = H.check_vectors("check-alloc", dir .. "/conformance/alloc")
    assert.is_not_nil(passed, out)
    assert.are.equal(0, failed, out)
    -- the directory holds 146 vectors today; more may be added
    assert.is_true(passed >= 146, out)
    -- errors carry upstream's wording
    local matched, total = out:match("error messages containing the upstream substring: (%d+)/(%d+)")
    assert.is_not_nil(matched, out)
    assert.are.equal(tonumber(total), tonumber(matched), out)
  end)
end)
