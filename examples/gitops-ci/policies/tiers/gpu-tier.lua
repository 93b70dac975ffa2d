-- gpu-tier: tier.example.com/tier is "gold" for GPUs with at least 80 GiB of
-- memory, "silver" for the others; devices without a memory capacity (NICs,
-- CPUs) get no tier.
local function tier(memory)
  if memory >= "80Gi" then return "gold" end
  return "silver"
end

return {
  name = "gpu-tier", version = "1.0.0", api = 1,
  domains = { "tier.example.com" },
  drivers = { "gpu.example.com" },
  derive = function(device)
    local memory = device.capacity.memory
    if memory == nil then return nil end
    return { ["tier.example.com/tier"] = tier(memory) }
  end,
}
