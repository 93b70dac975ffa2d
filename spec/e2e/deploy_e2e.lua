-- deploy_e2e.lua - the manifests under examples/deploy against a real
-- kube-apiserver: the cluster script applied rbac.yaml already (and serve runs
-- with its ServiceAccount in every other spec); the Deployment and the
-- policies ConfigMap pass a server-side dry run with strict field validation.
local E = require "e2e.support.e2e"
local H = require "support.helper"

describe("examples/deploy on a real control plane", function()
  it("rbac.yaml is applied and the ServiceAccount holds exactly its ClusterRole", function()
    local ok, out = E.kubectl{ "auth", "can-i", "--list", "--as=" .. E.sa_user }
    assert.is_true(ok, out)
    assert.truthy(out:find("resourceclaims.resource.k8s.io", 1, true), out)
    -- what the role does not grant is refused
    ok, out = E.kubectl{ "auth", "can-i", "delete", "pods", "--as=" .. E.sa_user }
    assert.are.equal("no", (out:match("^(%a+)")))
    ok, out = E.kubectl{ "auth", "can-i", "update", "leases.coordination.k8s.io/draengine", "-n",
      "draengine-system", "--as=" .. E.sa_user }
    assert.are.equal("yes", (out:match("^(%a+)")))
    ok, out = E.kubectl{ "auth", "can-i", "update", "leases.coordination.k8s.io/other", "-n",
      "draengine-system", "--as=" .. E.sa_user }
    assert.are.equal("no", (out:match("^(%a+)")))
  end)

  it("deployment.yaml passes a strict server-side dry run", function()
    local ok, out = E.kubectl{ "apply", "--dry-run=server", "--validate=strict", "-f",
      H.root .. "/examples/deploy/deployment.yaml" }
    assert.is_true(ok, out)
    assert.truthy(out:find("deployment.apps/draengine created (server dry run)", 1, true), out)
    assert.truthy(out:find("configmap/draengine-policies created (server dry run)", 1, true), out)
    assert.is_nil(out:lower():find("warning", 1, true), out)
  end)
end)
