-- A policy pack: its manifest names the policies it holds and the
-- attribute domains it owns (none here: gold-quota only admits claims).
return {
  name = "gold-quota",
  version = "1.0.0",
  description = "gold GPUs for production namespaces only",
  policies = { "gold-quota.lua" },
  domains = {},
}
