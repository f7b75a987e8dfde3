-- Argo CD resource health check for MyResource (myorg.io/v1alpha1).
-- Argo CD runs it with Lua 5.1 semantics; `obj` is the live object.
-- Order matters: an object whose latest spec my-operator has not seen yet is Progressing
-- whatever its old conditions say; then Degraded wins over Suspended, Suspended over Healthy.
-- Tested by test/unit/packaging/argocd_health_test.cpp against testdata/ (health_test.yaml).
local hs = {}

local function findCondition(conditions, conditionType)
  if conditions == nil then
    return nil
  end
  for _, condition in ipairs(conditions) do
    if condition.type == conditionType then
      return condition
    end
  end
  return nil
end

local function describe(condition, fallback)
  if condition == nil then
    return fallback
  end
  local reason = condition.reason or ""
  local message = condition.message or ""
  if reason ~= "" and message ~= "" then
    return reason .. ": " .. message
  end
  if message ~= "" then
    return message
  end
  if reason ~= "" then
    return reason
  end
  return fallback
end

-- Reasons of Ready=False that no retry fixes without a change by a person.
local failedReasons = { InvalidSpec = true, ReconcileError = true, CleanupFailed = true, CanaryFailed = true }

if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for my-operator to reconcile the object"
  return hs
end

local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for my-operator to observe generation " .. tostring(generation) ..
    " (status describes " .. tostring(observed or 0) .. ")"
  return hs
end

local conditions = obj.status.conditions
local ready = findCondition(conditions, "Ready")
local degraded = findCondition(conditions, "Degraded")
local progressing = findCondition(conditions, "Progressing")
local canary = findCondition(conditions, "Canary")

if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(degraded, "Degraded")
  return hs
end

if ready ~= nil and ready.status == "False" and failedReasons[ready.reason] then
  hs.status = "Degraded"
  hs.message = describe(ready, "Not ready")
  return hs
end

if canary ~= nil and canary.status == "False" and canary.reason == "CanaryFailed" then
  hs.status = "Degraded"
  hs.message = describe(canary, "Canary failed")
  return hs
end

if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = describe(progressing, "Paused: my-operator changes nothing while spec.paused is true")
  return hs
end

-- A condition written for an older generation says nothing about the current spec.
if ready ~= nil and ready.observedGeneration ~= nil and generation ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition of generation " .. tostring(generation)
  return hs
end

if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready, "Ready")
  return hs
end

hs.status = "Progressing"
if progressing ~= nil and progressing.status == "True" then
  hs.message = describe(progressing, "Progressing")
else
  hs.message = describe(ready, "Waiting for the Ready condition")
end
return hs
