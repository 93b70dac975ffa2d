-- draengine.vendors - what real DRA drivers call the things policies care
-- about.  The names come from the drivers' published ResourceSlices
-- (shared/corpus/hardware-topologies.md); a policy that bridges vendor
-- names to one standard name reads them from here instead of repeating
-- them.
--
--   local V = require "draengine.vendors"
--   V.numa_node(device)  -> integer NUMA node, or nil
--   V.memory(device)     -> quantity, or nil
--   V.product(device)    -> product / model string, or nil
local M = {}

-- NUMA node attributes, most authoritative first.
M.numa_attributes = {
  "resource.kubernetes.io/numaNode", -- standard (KEP-6072): int, or an ints list (physical node first)
  "dra.net/numaNode",                -- dranet NICs
  "dra.cpu/numaNodeID",              -- dra-driver-cpu, deprecated name kept for compatibility
  "gpu.nvidia.com/numa",             -- NVIDIA VFIO passthrough GPUs
  "gpu.amd.com/numaNode",            -- AMD GPU partitions (ROCm k8s-gpu-dra-driver)
}

-- Capacity names that hold a device's memory.
M.memory_capacities = { "memory", "addressableMemory" }

-- Attributes naming the product.
M.product_attributes = { "productName", "model" }

-- The NUMA node of a device: the first attribute above that is set; for a
-- list value the first element (the physical node, by KEP-6072's rule).
-- Negative values mean "no NUMA affinity" and give nil.
function M.numa_node(device)
  local attrs = device.attributes
  for _, name in ipairs(M.numa_attributes) do
    local v = attrs[name]
    if type(v) == "table" then v = v[1] end
    if math.type(v) == "integer" then
      if v < 0 then return nil end
      return v, name
    end
  end
  return nil
end

function M.memory(device)
  local caps = device.capacity
  for _, name in ipairs(M.memory_capacities) do
    local q = caps[name]
    if q then return q, name end
  end
  return nil
end

function M.product(device)
  local attrs = device.attributes
  for _, name in ipairs(M.product_attributes) do
    local v = attrs[name]
    if type(v) == "string" then return v, name end
  end
  return nil
end

return M
