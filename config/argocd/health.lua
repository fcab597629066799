-- Argo CD health of a Dockside object: Sandbox, SandboxService, Checkpoint and Execution alike, since every
-- kind writes the same kstatus conditions (api/v1alpha1/conditions.go; docs/gitops.md says what each status
-- means for each kind). Argo CD gives user scripts no string library, so this uses only the base language.
local health = { status = "Progressing", message = "waiting for the Dockside agent" }
local status = obj.status
if status == nil or status.conditions == nil then
  return health
end
-- Conditions written for an older generation say nothing about the spec now in the cluster.
if obj.metadata.generation ~= nil and status.observedGeneration ~= obj.metadata.generation then
  health.message = "waiting for the Dockside agent to see generation " .. obj.metadata.generation
  return health
end
local conditions = {}
for _, condition in ipairs(status.conditions) do
  conditions[condition.type] = condition
end
-- said is a condition's reason and message, as kubectl get shows them.
local function said(condition)
  if condition.message == nil or condition.message == "" then
    return condition.reason
  end
  return condition.reason .. ": " .. condition.message
end
local ready, stalled, paused = conditions["Ready"], conditions["Stalled"], conditions["Paused"]
if stalled ~= nil and stalled.status == "True" then
  health.status, health.message = "Degraded", said(stalled)
elseif ready ~= nil and ready.status == "True" and paused ~= nil and paused.status == "True" then
  health.status, health.message = "Suspended", said(ready)
elseif ready ~= nil and ready.status == "True" then
  health.status, health.message = "Healthy", said(ready)
elseif ready ~= nil then
  health.message = said(ready)
end
return health
