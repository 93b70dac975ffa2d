-- alloc_extra_spec.lua - more allocator conformance vectors (spec/fixtures/alloc-extra):
-- the upstream v1.36.2 table cases that ../shared/conformance/alloc does not hold,
-- three cases new in v0.37.0-alpha.2, and draengine's own vectors for rules of
-- dra-model.md §2.  Run through the allocate command by the shared checker; all
-- must pass.  Known divergences live in spec/fixtures/alloc-extra-failing (not run
-- here; see its README.md).
local H = require "support.helper"

describe("extra allocator conformance vectors", function()
  it("pass 100% through draengine allocate --node", function()
    local out, passed, failed = H.check_vectors("check-alloc", H.root .. "/spec/fixtures/alloc-extra")
    assert.is_not_nil(passed, out)
    assert.are.equal(0, failed, out)
    -- 73 upstream v1.36.2 cases + 3 v0.37.0-alpha.2 cases + 48 draengine vectors
    assert.is_true(passed >= 124, out)
  end)
end)

describe("allocator against the reference model", function()
  -- fuzz_diff.py draws random allocation problems from a fixed seed, takes the
  -- expectation from refmodel.py (an independent Python model of the v0.36.2
  -- allocator, quirks included) and checks draengine on them, result order pinned.
  it("agrees on 150 seeded random problems", function()
    local dir = assert(H.shared_dir(), "conformance checker not found")
    local out = os.tmpname()
    os.remove(out)
    local cmd = string.format(
      "env -u LD_PRELOAD python3 %s --bin %s --checker %s --out %s --n 150 --seed 7 2>&1; rm -rf %s",
      H.shell_quote(H.root .. "/spec/fixtures/alloc-extra/tools/fuzz_diff.py"), H.shell_quote(H.bin),
      H.shell_quote(dir .. "/conformance/check-alloc"), H.shell_quote(out), H.shell_quote(out))
    local p = assert(io.popen(cmd))
    local res = p:read("a")
    p:close()
    local passed, failed = res:match("(%d+) passed, (%d+) failed")
    assert.is_not_nil(passed, res)
    assert.are.equal(0, tonumber(failed), res)
    assert.are.equal(150, tonumber(passed), res)
    -- the draw must exercise all three outcomes, or the check says little
    local ok_n = tonumber(res:match("'results': (%d+)") or "0")
    local unsat_n = tonumber(res:match("'unsatisfiable': (%d+)") or "0")
    local err_n = tonumber(res:match("'error': (%d+)") or "0")
    assert.is_true(ok_n >= 20 and unsat_n >= 20 and err_n >= 5, res)
  end)
end)
