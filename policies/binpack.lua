-- binpack: prefer the node that has the fewest free devices left after the
-- placement, so that whole nodes stay free for large jobs.
--
-- score = share of the node's devices in use after the placement, in [0, 1].
return {
  name = "binpack",
  version = "1.0.0",
  api = 1,
  description = "bin-packing: fewest free devices left",
  domains = {},
  weight = 1,
  score = function(node, placement)
    local total = node.devices
    if total <= 0 then return 0 end
    local free_after = node.free_devices - #placement
    if free_after < 0 then free_after = 0 end
    return 1 - free_after / total
  end,
}
