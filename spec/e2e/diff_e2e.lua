-- diff_e2e.lua - the differential check against the real kube-scheduler
-- (spec/e2e/diff) for one seed: every pinned pod gets the same devices from
-- both schedulers, every other pod is placed by both or pending in both, and
-- the allocated devices per class agree. The issue note reports seeds 1-20.
local H = require "support.helper"

describe("draengine against kube-scheduler 1.37 (spec/e2e/diff)", function()
  it("agrees on every decision of seed " .. (os.getenv("E2E_DIFF_SEED") or "1"), function()
    local seed = os.getenv("E2E_DIFF_SEED") or "1"
    local cmd = "env -u LD_PRELOAD DRAENGINE_BIN=" .. H.shell_quote(H.bin) .. " " ..
      H.shell_quote(H.root .. "/spec/e2e/diff") .. " --seed " .. seed .. " 2>&1"
    local p = io.popen(cmd)
    local out = p:read("a")
    local ok = p:close()
    local last = out:match("([^\n]*)\n?$")
    local pods, agree, differ = last:match("^e2e%-diff seed %d+: (%d+) pods, (%d+) agree, (%d+) differ$")
    assert.is_not_nil(pods, out)
    assert.are.equal("0", differ, out)
    assert.are.equal(pods, agree, out)
    assert.is_true(tonumber(pods) >= 50, out)
    -- both schedulers placed pods and left some pending: the check is not vacuous
    assert.truthy(out:find("draengine: %d+ pods in [%d.]+ s, %d+ placed, %d+ pending"), out)
    local placed = tonumber(out:match("draengine: %d+ pods in [%d.]+ s, (%d+) placed"))
    local pending = tonumber(out:match("draengine: %d+ pods in [%d.]+ s, %d+ placed, (%d+) pending"))
    assert.is_true(placed >= 10 and pending >= 5, out)
    assert.is_true(ok, out)
  end)
end)
