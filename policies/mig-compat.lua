-- mig-compat: a whole GPU and its partitions are never allocated at the
-- same time (the groups hook: KEP-5963 compatibility groups, with scopes the
-- policy defines).
--
-- One scope per physical GPU.  The whole GPU is in group "whole", each
-- partition in group "partition"; devices of one scope allocated together
-- (already allocated ones included) must share a group, so partitions
-- coexist with each other but never with the whole GPU.  This matters where
-- drivers advertise both without shared counters (AKS A100 nodes with MIG,
-- kubernetes-sigs/dra-driver-nvidia-gpu#719, in
-- shared/corpus/hardware-topologies.md 3.3).
--
--   NVIDIA: type "gpu" / "vfio" -> scope uuid; type "mig" -> scope parentUUID
--   AMD:    type "amdgpu" -> scope deviceID; "amdgpu-partition" -> scope
--           parentDeviceID (or deviceID, identical for all partitions of
--           one GPU)
return {
  name = "mig-compat",
  version = "1.0.0",
  api = 1,
  description = "whole GPUs and their MIG / AMD partitions are mutually exclusive",
  domains = {},
  drivers = { "gpu.nvidia.com", "gpu.amd.com" },
  groups = function(device)
    local a = device.attributes
    local t = a.type
    if t == "gpu" or t == "vfio" then
      if type(a.uuid) == "string" then return { scope = a.uuid, groups = { "whole" } } end
    elseif t == "mig" then
      if type(a.parentUUID) == "string" then return { scope = a.parentUUID, groups = { "partition" } } end
    elseif t == "amdgpu" then
      if type(a.deviceID) == "string" then return { scope = "amd-" .. a.deviceID, groups = { "whole" } } end
    elseif t == "amdgpu-partition" then
      local parent = a.parentDeviceID or a.deviceID
      if type(parent) == "string" then return { scope = "amd-" .. parent, groups = { "partition" } } end
    end
    return nil
  end,
}
