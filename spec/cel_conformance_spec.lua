-- cel_conformance_spec.lua - the CEL conformance vectors through
-- `draengine cel --batch`, scored by ../shared/conformance/check-cel.
local H = require "support.helper"

describe("CEL conformance vectors", function()
  it("pass at least 97 %", function()
    local shared = H.shared_dir()
    assert.is_not_nil(shared, "conformance vectors not found")
    local out, passed, failed = H.check_vectors("check-cel", shared .. "/conformance/cel")
    assert.is_not_nil(passed, "no summary line in:\n" .. out:sub(-2000))
    assert.is_true(passed + failed > 800, "too few vectors scored")
    local rate = passed / (passed + failed)
    assert.is_true(rate >= 0.97, string.format("pass rate %.2f%%:\n%s", rate * 100, out:sub(-4000)))
  end)
end)
