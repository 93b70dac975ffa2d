-- cel_conformance_spec.lua - the CEL conformance vectors through
-- `draengine cel --batch`, scored by ../shared/conformance/check-cel.
local H = require "support.helper"

describe("CEL conformance vectors", function()
  -- python must not run under the ASan LD_PRELOAD; the binary links ASan itself
  it("pass at least 97 %", function()
    local shared = H.shared_dir()
    assert.is_not_nil(shared, "conformance vectors not found")
    local cmd = string.format("env -u LD_PRELOAD python3 %s --bin %s %s 2>&1",
      H.shell_quote(shared .. "/conformance/check-cel"), H.shell_quote(H.bin),
      H.shell_quote(shared .. "/conformance/cel"))
    local p = assert(io.popen(cmd, "r"))
    local out = p:read("a")
    p:close()
    local passed, failed = out:match("(%d+) passed, (%d+) failed%s*$")
    assert.is_not_nil(passed, "no summary line in:\n" .. out:sub(-2000))
    passed, failed = tonumber(passed), tonumber(failed)
    assert.is_true(passed + failed > 800, "too few vectors scored")
    local rate = passed / (passed + failed)
    assert.is_true(rate >= 0.97, string.format("pass rate %.2f%%:\n%s", rate * 100, out:sub(-4000)))
  end)
end)
