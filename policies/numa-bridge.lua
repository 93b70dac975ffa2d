-- numa-bridge: publish the standard resource.kubernetes.io/numaNode for every
-- device whose driver only says it in its own words, so that one claim can
-- use `matchAttribute: resource.kubernetes.io/numaNode` across a GPU whose
-- driver says `numa` and a NIC whose driver says `dra.net/numaNode`.
--
-- Sources (shared/corpus/hardware-topologies.md 1.1): dranet publishes
-- dra.net/numaNode, dra-driver-cpu the deprecated dra.cpu/numaNodeID,
-- NVIDIA's VFIO devices `numa`, AMD partitions `numaNode`.  Devices whose
-- driver already publishes the standard attribute are left alone.
--
-- Grace trays (GB200, GB300): the GPU driver publishes no NUMA node at all;
-- the PCI domain says it (live OCI BM.GPU.GB200 slice: domains 0008/0009 on
-- NUMA 0, 0018/0019 on NUMA 1), so for those products the domain's high
-- nibble is used.
--
-- Ownership: resource.kubernetes.io is a shared standard domain; this
-- policy owns exactly one attribute in it.
local V = require "draengine.vendors"

local STANDARD = "resource.kubernetes.io/numaNode"

local GRACE_PRODUCTS = { "GB200", "GB300" }

local function numa_from_pci_domain(device)
  local product = device.attributes.productName
  if type(product) ~= "string" then return nil end
  local grace = false
  for _, p in ipairs(GRACE_PRODUCTS) do
    if product:find(p, 1, true) then grace = true end
  end
  if not grace then return nil end
  local bdf = device.attributes["resource.kubernetes.io/pciBusID"]
  if type(bdf) ~= "string" then return nil end
  local domain = tonumber(bdf:match("^(%x%x%x%x):"), 16)
  if not domain then return nil end
  return domain // 16
end

return {
  name = "numa-bridge",
  version = "1.0.0",
  api = 1,
  description = "resource.kubernetes.io/numaNode from vendor NUMA attributes",
  domains = { STANDARD },
  derive = function(device)
    if device.attributes[STANDARD] ~= nil then
      return nil
    end
    local node = V.numa_node(device) or numa_from_pci_domain(device)
    if node == nil then
      return nil
    end
    return { [STANDARD] = node }
  end,
}
