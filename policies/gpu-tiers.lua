-- gpu-tiers: performance tiers for whole GPUs, from the product name, then
-- the architecture, then the memory the driver publishes.
--
--   tier.draengine.io/class      "h200-class" | "h100-class" | "a100-class" | "l4-class"
--   tier.draengine.io/tier       "platinum"   | "gold"       | "silver"     | "bronze"
--   tier.draengine.io/rank       4            | 3            | 2            | 1
--   tier.draengine.io/memoryGiB  whole GiB of device memory (when published)
--
-- A DeviceClass can then select `device.attributes["tier.draengine.io"].tier
-- == "gold"` or `.rank >= 3` across vendors.  Partitions (MIG devices, AMD
-- partitions) are not tiered: a 1g.10gb slice of an H100 is not H100-class.
--
-- Product names and memory sizes as drivers publish them
-- (shared/corpus/hardware-topologies.md 1.2-1.4): "NVIDIA H100 80GB HBM3"
-- with 81559Mi, "NVIDIA A100-SXM4-40GB" with 40Gi, "NVIDIA GB200" with
-- 189471Mi, "AMD_Instinct_MI300X_OAM" with 196592Mi, Gaudi "Gaudi2"/"Gaudi3".
local V = require "draengine.vendors"

local D = "tier.draengine.io/"

local CLASSES = {
  ["h200-class"] = { tier = "platinum", rank = 4 },
  ["h100-class"] = { tier = "gold", rank = 3 },
  ["a100-class"] = { tier = "silver", rank = 2 },
  ["l4-class"] = { tier = "bronze", rank = 1 },
}

-- Product name patterns, checked in order (plain substrings).
local PRODUCTS = {
  { "GB300", "h200-class" }, { "B300", "h200-class" },
  { "GB200", "h200-class" }, { "B200", "h200-class" },
  { "H200", "h200-class" }, { "GH200 144GB", "h200-class" },
  { "MI325X", "h200-class" }, { "MI300X", "h200-class" },
  { "GH200", "h100-class" }, { "H100", "h100-class" }, { "H800", "h100-class" }, { "H20", "h100-class" },
  { "Gaudi3", "h100-class" },
  { "A100", "a100-class" }, { "A800", "a100-class" }, { "A30", "a100-class" },
  { "L40S", "a100-class" }, { "L40", "a100-class" }, { "A40", "a100-class" }, { "Gaudi2", "a100-class" },
  { "L4", "l4-class" }, { "T4", "l4-class" }, { "A10", "l4-class" }, { "A16", "l4-class" }, { "A2", "l4-class" },
}

local ARCHITECTURES = {
  Blackwell = "h200-class",
  Hopper = "h100-class",
}

local PARTITION_TYPES = { mig = true, ["amdgpu-partition"] = true }

local function by_memory(gib)
  if gib >= 130 then return "h200-class" end
  if gib >= 75 then return "h100-class" end
  if gib >= 38 then return "a100-class" end
  return "l4-class"
end

local function classify(device, gib)
  local product = V.product(device)
  if product then
    for _, p in ipairs(PRODUCTS) do
      if product:find(p[1], 1, true) then return p[2] end
    end
  end
  local arch = device.attributes.architecture
  if type(arch) == "string" and ARCHITECTURES[arch] then
    -- a Hopper with H200-size memory is H200-class
    if arch == "Hopper" and gib and gib >= 130 then return "h200-class" end
    return ARCHITECTURES[arch]
  end
  if gib then return by_memory(gib) end
  return nil
end

return {
  name = "gpu-tiers",
  version = "1.0.0",
  api = 1,
  description = "GPU performance tiers (H200/H100/A100/L4-class) from product, architecture and memory",
  domains = { "tier.draengine.io" },
  drivers = { "gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com", "gaudi.intel.com" },
  derive = function(device)
    local kind = device.attributes.type
    if PARTITION_TYPES[kind] then return nil end
    local mem = V.memory(device)
    local gib = mem and mem:to("Gi") // 1 or nil
    if gib and gib <= 0 then gib = nil end -- integrated GPUs publish 0
    local class = classify(device, gib)
    if not class then return nil end
    local out = {
      [D .. "class"] = class,
      [D .. "tier"] = CLASSES[class].tier,
      [D .. "rank"] = CLASSES[class].rank,
    }
    if gib then out[D .. "memoryGiB"] = math.tointeger(gib) end
    return out
  end,
}
