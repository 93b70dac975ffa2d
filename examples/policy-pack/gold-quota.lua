-- gold-quota: claims for the gold-gpu DeviceClass (GPUs that the shipped
-- gpu-tiers policy puts in tier "gold") are admitted only from production
-- namespaces.  admit runs once per claim revision, before any search.
local PRODUCTION = { prod = true, ["ml-prod"] = true }

return {
  name = "gold-quota",
  version = "1.0.0",
  api = 1,
  description = "gold GPUs are reserved for production namespaces",
  domains = {},
  admit = function(claim)
    for _, request in ipairs(claim.requests) do
      if request.class == "gold-gpu" and not PRODUCTION[claim.namespace] then
        return false, "class gold-gpu is reserved for the namespaces prod and ml-prod"
      end
    end
    return true
  end,
}
