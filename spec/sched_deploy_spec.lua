-- sched_deploy_spec.lua - the manifests under examples/deploy parse, and the
-- RBAC rules grant exactly what `draengine serve` uses (the list here is the
-- one `make e2e` proved against a real kube-apiserver: spec/e2e reads its
-- audit log and fails on any 403).
local H = require "support.helper"
local core = require "draengine.core"

local function docs(name)
  local out = {}
  for _, d in ipairs(core.load_docs(H.root .. "/examples/deploy/" .. name)) do out[#out + 1] = d.object end
  return out
end

local function by_kind(list, kind)
  local r = {}
  for _, o in ipairs(list) do if o.kind == kind then r[#r + 1] = o end end
  return r
end

describe("deploy manifests", function()
  it("RBAC grants exactly the calls serve makes", function()
    local objs = docs("rbac.yaml")
    local grants = {}
    for _, kind in ipairs({ "ClusterRole", "Role" }) do
      for _, role in ipairs(by_kind(objs, kind)) do
        for _, rule in ipairs(role.rules) do
          for _, g in ipairs(rule.apiGroups) do
            for _, r in ipairs(rule.resources) do
              for _, v in ipairs(rule.verbs) do grants[#grants + 1] = (g == "" and "core" or g) .. "/" .. r .. ":" .. v end
            end
          end
        end
      end
    end
    table.sort(grants)
    assert.are.same({
      "coordination.k8s.io/leases:create", "coordination.k8s.io/leases:get", "coordination.k8s.io/leases:update",
      "core/namespaces:list", "core/namespaces:watch", "core/nodes:list", "core/nodes:watch",
      "core/pods/binding:create", "core/pods/status:patch", "core/pods:get", "core/pods:list", "core/pods:watch",
      "events.k8s.io/events:create",
      "resource.k8s.io/deviceclasses:list", "resource.k8s.io/deviceclasses:watch",
      "resource.k8s.io/devicetaintrules:list", "resource.k8s.io/devicetaintrules:watch",
      "resource.k8s.io/resourceclaims/binding:patch", "resource.k8s.io/resourceclaims/binding:update",
      "resource.k8s.io/resourceclaims/status:patch", "resource.k8s.io/resourceclaims/status:update",
      "resource.k8s.io/resourceclaims:create", "resource.k8s.io/resourceclaims:get", "resource.k8s.io/resourceclaims:list",
      "resource.k8s.io/resourceclaims:update", "resource.k8s.io/resourceclaims:watch",
      "resource.k8s.io/resourceclaimtemplates:list", "resource.k8s.io/resourceclaimtemplates:watch",
      "resource.k8s.io/resourceslices:list", "resource.k8s.io/resourceslices:watch",
      "scheduling.k8s.io/podgroups:list", "scheduling.k8s.io/podgroups:watch",
    }, grants)
    local sa = by_kind(objs, "ServiceAccount")[1]
    for _, b in ipairs(by_kind(objs, "ClusterRoleBinding")) do
      assert.are.equal(sa.metadata.name, b.subjects[1].name)
      assert.are.equal(sa.metadata.namespace, b.subjects[1].namespace)
    end
  end)

  it("the pool status controller's extra RBAC grants exactly its calls", function()
    local objs = docs("rbac-pool-status.yaml")
    local grants = {}
    for _, rule in ipairs(by_kind(objs, "ClusterRole")[1].rules) do
      for _, r in ipairs(rule.resources) do
        for _, v in ipairs(rule.verbs) do grants[#grants + 1] = rule.apiGroups[1] .. "/" .. r .. ":" .. v end
      end
    end
    table.sort(grants)
    assert.are.same({ "resource.k8s.io/resourcepoolstatusrequests/status:update",
      "resource.k8s.io/resourcepoolstatusrequests:delete", "resource.k8s.io/resourcepoolstatusrequests:list",
      "resource.k8s.io/resourcepoolstatusrequests:watch" }, grants)
    assert.are.equal("draengine", by_kind(objs, "ClusterRoleBinding")[1].subjects[1].name)
  end)

  it("the Deployment elects a leader, probes /livez and /readyz and mounts the policies directory", function()
    local d = by_kind(docs("deployment.yaml"), "Deployment")[1]
    local c = d.spec.template.spec.containers[1]
    local args = table.concat(c.command, " ")
    assert.truthy(args:find("--leader-elect", 1, true))
    assert.are.equal("/livez", c.livenessProbe.httpGet.path)
    assert.are.equal("/readyz", c.readinessProbe.httpGet.path)
    assert.are.equal("draengine", d.spec.template.spec.serviceAccountName)
    local mount = c.volumeMounts[1]
    assert.truthy(args:find("--policy-dir=" .. mount.mountPath, 1, true))
    assert.is_nil(mount.subPath) -- a subPath mount never sees ConfigMap updates
    assert.are.equal("draengine-policies", d.spec.template.spec.volumes[1].configMap.name)
    -- every flag the Deployment passes is one `draengine serve` documents
    local rc, help = H.run({ "serve", "--help" })
    assert.are.equal(0, rc)
    for i = 3, #c.command do
      local flag = c.command[i]:match("^(%-%-[%w%-]+)")
      assert.truthy(flag, c.command[i])
      assert.truthy(help:find(flag, 1, true), flag)
    end
  end)

  it("the example kubeconfig is one draengine can read", function()
    local d = os.tmpname(); os.remove(d); os.execute("mkdir -p " .. d)
    local text = H.read_file(H.root .. "/examples/deploy/kubeconfig.example.yaml")
    text = text:gsub("/var/run/secrets/draengine/token", d .. "/token"):gsub("/etc/draengine/ca.crt", d .. "/ca.crt")
    local f = io.open(d .. "/token", "w"); f:write("example-token-abcdef"); f:close()
    f = io.open(d .. "/ca.crt", "w"); f:write("x"); f:close()
    f = io.open(d .. "/kubeconfig", "w"); f:write(text); f:close()
    local cfg = core.kube.config{ kubeconfig = d .. "/kubeconfig" }
    assert.are.equal("https://my-cluster.example.com:6443", cfg:server())
    assert.are.equal("draengine-system", cfg:namespace())
    os.execute("rm -rf " .. d)
  end)
end)
