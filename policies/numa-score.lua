-- numa-score: placements whose devices share one NUMA node first.
--
-- 1 when every device of the placement that has a NUMA node has the same
-- one, 0 when they are spread, 0.5 when none says (neither aligned nor
-- known to be spread).  The weight (10) puts alignment before bin-packing
-- (whose score is at most 1).  NUMA nodes come from the standard attribute
-- (published by drivers or derived by numa-bridge) or vendor names.
local V = require "draengine.vendors"

return {
  name = "numa-score",
  version = "1.0.0",
  api = 1,
  description = "NUMA-aligned placements first",
  domains = {},
  weight = 10,
  score = function(node, placement)
    local seen, count = {}, 0
    for _, device in ipairs(placement) do
      local n = V.numa_node(device)
      if n ~= nil and not seen[n] then
        seen[n] = true
        count = count + 1
      end
    end
    if count == 0 then return 0.5 end
    if count == 1 then return 1 end
    return 0
  end,
}
