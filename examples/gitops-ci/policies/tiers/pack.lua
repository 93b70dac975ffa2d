-- The tiers pack: a tier for every GPU, from its memory, so that claims can
-- ask for a class of GPU instead of a product name.
return {
  name = "tiers", version = "1.0.0",
  description = "GPU tiers from memory",
  policies = { "gpu-tier.lua" },
  domains = { "tier.example.com" },
}
